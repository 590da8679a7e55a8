"""Cut streamed Markdown into blocks that are complete, so each is rendered once into scrollback.

Text printed to the terminal's scrollback cannot be changed afterwards, so a block is committed
only when nothing later can change how it renders: at a blank line outside a code fence, or at
a fence's closing line. The unfinished rest is the *tail*, shown live above the prompt until it
is committed. A very long block (a paragraph without blank lines, a long code block) is cut at a
line or word boundary once it passes ``max_pending`` characters, so the tail stays small and the
terminal never waits for the end of the reply. Scanning is incremental: each character is looked
at once, whatever the number of deltas.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


class MarkdownStream:
    """Incremental splitter for one assistant message."""

    def __init__(self, max_pending: int = 2000) -> None:
        self.max_pending = max_pending
        self.text = ""
        self.done = 0  # text[:done] has been committed
        self._scan = 0  # start of the first line not looked at yet
        self._fence: str | None = None  # the opening marker while inside a fence
        self._reopen = ""  # the fence's opening line, to restart it after a forced cut

    @property
    def tail(self) -> str:
        """Return what was received but not committed yet."""
        return self.text[self.done :]

    @property
    def committed(self) -> str:
        """Return the text committed so far."""
        return self.text[: self.done]

    def feed(self, delta: str) -> list[str]:
        """Add streamed text; return the blocks it completed (Markdown source, in order)."""
        self.text += delta
        blocks = self._advance()
        if len(self.text) - self.done > self.max_pending:
            forced = self._force_cut()
            if forced:
                blocks.append(forced)
        return blocks

    def finish(self, final: str | None = None) -> tuple[list[str], bool]:
        """Commit everything; return the last blocks and whether ``final`` matched the stream.

        :param final: the message's complete text (``message.complete.text``), which replaces
            what was streamed. When it does not continue what was already committed, the
            committed part stays as it is on screen and ``False`` is returned.
        """
        matched = True
        if final is not None and final != self.text:
            if final.startswith(self.text[: self.done]):
                self.text = final
            else:
                matched = False
        blocks = self._advance()
        rest = self.text[self.done :]
        if rest.strip():
            blocks.append(self._reopen + rest)
        self.done = len(self.text)
        self._scan = self.done
        self._fence = None
        self._reopen = ""
        return blocks, matched

    def _commit(self, end: str | int) -> str:
        stop = end if isinstance(end, int) else len(self.text)
        block = self._reopen + self.text[self.done : stop]
        self.done = stop
        if self._fence is None:
            self._reopen = ""
        return block

    def _advance(self) -> list[str]:
        blocks: list[str] = []
        text = self.text
        while True:
            newline = text.find("\n", self._scan)
            if newline < 0:
                return blocks
            line = text[self._scan : newline]
            self._scan = newline + 1
            match = _FENCE.match(line)
            if self._fence is not None:
                if match and match.group(1)[0] == self._fence[0] and len(match.group(1)) >= len(self._fence):
                    if not match.group(2).strip():
                        self._fence = None
                        blocks.append(self._commit(self._scan))
                continue
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                if self.text[self.done : self._scan - len(line) - 1].strip():
                    blocks.append(self._commit(self._scan - len(line) - 1))
                self._fence = match.group(1)
                self._reopen = ""
                self._fence_line = line
                continue
            if not line.strip():
                if self.text[self.done : self._scan].strip():
                    blocks.append(self._commit(self._scan))
                else:
                    self.done = self._scan

    def _force_cut(self) -> str:
        """Cut an over-long block at its last line (or word) boundary; return the piece."""
        text = self.text
        cut = text.rfind("\n", self.done, self._scan)
        if self._fence is not None:
            if cut < self.done:
                return ""
            piece = self._reopen + text[self.done : cut + 1]
            self.done = cut + 1
            self._reopen = self._fence_line + "\n"
            fence = self._fence
            return piece + fence + "\n"
        if cut < self.done + self.max_pending // 2:
            space = text.rfind(" ", self.done, len(text))
            cut = space if space > self.done else -1
        if cut < 0:
            return ""
        piece = text[self.done : cut + 1]
        self.done = cut + 1
        self._scan = max(self._scan, self.done)
        return piece
