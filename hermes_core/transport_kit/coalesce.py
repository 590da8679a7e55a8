"""Merge runs of text and reasoning deltas into one piece each, the way every stream batches them.

A stream feeds each event to :meth:`DeltaCoalescer.add`; deltas are absorbed, anything else is
left to the stream, which flushes first so the order of what it writes follows the events. The
pending text comes out with :meth:`~DeltaCoalescer.take` (pull) or through ``on_flush`` (push).
Nothing is ever dropped except reasoning when ``keep_reasoning`` is off.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_core.events import ReasoningDelta, TextDelta

#: Receives ``(text, reasoning)``; each is None when no delta of its kind was pending.
OnFlush = Callable[[str | None, str | None], None]


class DeltaCoalescer:
    """Pending text and reasoning deltas of one stream.

    :param on_flush: called by :meth:`flush` (and by the automatic flushes below) with the
        merged text and reasoning.
    :param keep_reasoning: keep reasoning deltas (else they are absorbed and dropped).
    :param split_kinds: flush before a delta of the other kind, so text and reasoning never merge
        across each other (streams that show them interleaved).
    :param max_chars: flush once this many characters are pending (0: no limit).
    :raises ValueError: ``split_kinds`` or ``max_chars`` without ``on_flush`` (their automatic
        flushes would have nowhere to put the text).
    """

    __slots__ = ("_chars", "_reasoning", "_text", "keep_reasoning", "max_chars", "on_flush", "split_kinds")

    def __init__(
        self,
        on_flush: OnFlush | None = None,
        *,
        keep_reasoning: bool = True,
        split_kinds: bool = False,
        max_chars: int = 0,
    ) -> None:
        if on_flush is None and (split_kinds or max_chars):
            # Those flush on their own; with nobody to hand the text to it would be lost.
            raise ValueError("split_kinds and max_chars flush automatically: give on_flush")
        self.on_flush = on_flush
        self.keep_reasoning = keep_reasoning
        self.split_kinds = split_kinds
        self.max_chars = max_chars
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._chars = 0

    def add(self, event: object) -> bool:
        """Absorb ``event`` when it is a text or reasoning delta; return whether it was one."""
        # On every streamed token: exact type checks (event records are final) and no inner call.
        kind = type(event)
        if kind is TextDelta:
            parts, other = self._text, self._reasoning
        elif kind is ReasoningDelta:
            if not self.keep_reasoning:
                return True
            parts, other = self._reasoning, self._text
        else:
            return False
        if other and self.split_kinds:
            self.flush()
        text: str = event.text  # type: ignore[attr-defined]
        parts.append(text)
        if self.max_chars:
            self._chars += len(text)
            if self._chars >= self.max_chars:
                self.flush()
        return True

    @property
    def pending(self) -> bool:
        """Whether any text or reasoning waits to be written."""
        return bool(self._text or self._reasoning)

    def take(self) -> tuple[str | None, str | None]:
        """Return the pending ``(text, reasoning)`` merged, and clear.

        Each is None when no delta of its kind was pending (an empty delta gives ``""``: streams
        write it as they always did).
        """
        text = "".join(self._text) if self._text else None
        reasoning = "".join(self._reasoning) if self._reasoning else None
        self._text.clear()
        self._reasoning.clear()
        self._chars = 0
        return text, reasoning

    def flush(self) -> None:
        """Hand what is pending to ``on_flush`` (nothing happens when nothing is pending)."""
        if self._text or self._reasoning:
            text, reasoning = self.take()
            if self.on_flush is not None:
                self.on_flush(text, reasoning)
