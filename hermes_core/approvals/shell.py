"""A forgiving reader of shell command text, for the approval guards (docs/reference/core.md#fixed-asks).

It is not a shell parser. It splits text into scripts of pipelines of simple commands, reads
substitutions (``$( )``, backticks, ``<( )``) and subshells as nested scripts, and re-reads every
quoted string that could hold a command (``sh -c '…'``) as a script of its own. It never raises:
unbalanced quotes and brackets run to the end of the text, and nesting past a fixed depth is
read flat (its words are kept, its structure is not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Command", "Script", "all_words", "nested_words", "parse_command"]

# Deeper nesting is still scanned, only flattened: words are never lost, structure is.
_MAX_DEPTH = 24
# Quoted text is re-read as a command when it could hold more than one plain word.
_REREAD = re.compile(r"[\s;&|()<>`]|\$\(")


@dataclass(slots=True)
class Command:
    """A simple command: its words, plus scripts found inside it."""

    words: list[str] = field(default_factory=list)
    nested: list[Script] = field(default_factory=list)  # $( ), ` `, <( ), >( ), ( )
    quoted: list[Script] = field(default_factory=list)  # quoted text re-read as commands


Pipeline = list[Command]
Script = list[Pipeline]


class _Reader:
    """Read shell-ish text into scripts of pipelines of simple commands; never raises."""

    def __init__(self, text: str, depth: int) -> None:
        self.text = text
        self.pos = 0
        self.depth = depth

    def script(self, closer: str | None) -> Script:
        """Read until ``closer`` (``)`` or a backtick) or the end of the text.

        :param closer: the character that ends this (nested) script, or ``None`` at top level.
        :returns: the pipelines read.
        """
        text = self.text
        script: Script = []
        pipeline: Pipeline = []
        cmd = Command()
        word: list[str] = []
        in_word = False

        def end_word() -> None:
            nonlocal word, in_word
            if in_word:
                cmd.words.append("".join(word))
            word, in_word = [], False

        def end_command() -> None:
            nonlocal cmd
            end_word()
            if cmd.words or cmd.nested or cmd.quoted:
                pipeline.append(cmd)
            cmd = Command()

        def end_pipeline() -> None:
            nonlocal pipeline
            end_command()
            if pipeline:
                script.append(pipeline)
            pipeline = []

        while self.pos < len(text):
            ch = text[self.pos]
            nxt = text[self.pos + 1] if self.pos + 1 < len(text) else ""
            if closer is not None and ch == closer:
                self.pos += 1
                break
            if ch == "\\":
                if nxt == "\n":  # line continuation
                    self.pos += 2
                    continue
                word.append(nxt or "\\")
                in_word = True
                self.pos += 2 if nxt else 1
            elif ch == "'":
                end = text.find("'", self.pos + 1)
                end = len(text) if end < 0 else end
                content = text[self.pos + 1 : end]
                self.pos = end + 1
                word.append(content)
                in_word = True
                self._reread(cmd, content)
            elif ch == '"':
                self.pos += 1
                value, plain = self._double_quoted(cmd)
                word.append(value)
                in_word = True
                self._reread(cmd, plain)
            elif ch == "$" and nxt == "(":
                self.pos += 2
                self._nested(cmd, ")")
                in_word = True  # the substitution is part of a word
            elif ch == "`":
                self.pos += 1
                self._nested(cmd, "`")
                in_word = True
            elif ch in "<>" and nxt == "(":  # process substitution
                end_word()
                self.pos += 2
                self._nested(cmd, ")")
            elif ch in "<>":  # redirection; its target stays a word of this command
                end_word()
                self.pos += 1
                follow = "<&>-" if ch == "<" else ">&|"  # <<, <<<, <<-, <&, <>, >>, >&, >|
                while self.pos < len(text) and text[self.pos] in follow:
                    self.pos += 1
            elif ch == "(":
                end_word()
                self.pos += 1
                self._nested(cmd, ")")
            elif ch == ")":  # unbalanced: a separator
                end_command()
                self.pos += 1
            elif ch == "|":
                if nxt == "|":
                    end_pipeline()
                    self.pos += 2
                else:
                    end_command()
                    self.pos += 2 if nxt == "&" else 1
            elif ch == "&":
                if nxt == ">":  # &> and &>> redirect; the target stays a word
                    end_word()
                    self.pos += 3 if text[self.pos + 2 : self.pos + 3] == ">" else 2
                else:
                    end_pipeline()
                    self.pos += 2 if nxt == "&" else 1
            elif ch in ";\n":
                end_pipeline()
                self.pos += 1
            elif ch in " \t\r\f\v":
                end_word()
                self.pos += 1
            else:
                word.append(ch)
                in_word = True
                self.pos += 1
        end_pipeline()
        return script

    def _nested(self, cmd: Command, closer: str) -> None:
        """Read a substitution or subshell into ``cmd.nested`` (flattened when too deep)."""
        if self.depth >= _MAX_DEPTH:
            # Too deep to recurse: read the rest flat so its words are still scanned.
            cmd.nested.append(_Reader(self.text[self.pos :], _MAX_DEPTH).flat())
            self.pos = len(self.text)
            return
        self.depth += 1
        cmd.nested.append(self.script(closer))
        self.depth -= 1

    def flat(self) -> Script:
        """Read the whole text as words only, splitting at every operator."""
        words = [w for w in re.split(r"[\s;&|()<>`\"'$\\]+", self.text) if w]
        return [[Command(words=words)]] if words else []

    def _reread(self, cmd: Command, content: str) -> None:
        """Re-read quoted text that may be a command (``sh -c '…'``) into ``cmd.quoted``."""
        if not _REREAD.search(content):
            return
        if self.depth >= _MAX_DEPTH:
            cmd.quoted.append(_Reader(content, _MAX_DEPTH).flat())
            return
        cmd.quoted.append(_Reader(content, self.depth + 1).script(None))

    def _double_quoted(self, cmd: Command) -> tuple[str, str]:
        """Read a double-quoted string from ``self.pos`` (just after the opening quote).

        Substitutions inside it are read into ``cmd.nested`` and left out of the plain text,
        so that no character is read twice at the same level.

        :returns: the word value, and the plain text to re-read.
        """
        text = self.text
        value: list[str] = []
        plain: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            nxt = text[self.pos + 1] if self.pos + 1 < len(text) else ""
            if ch == '"':
                self.pos += 1
                break
            if ch == "\\" and nxt in '$`"\\\n':
                if nxt and nxt != "\n":
                    value.append(nxt)
                    plain.append(nxt)
                self.pos += 2
            elif (ch == "$" and nxt == "(") or ch == "`":
                start = self.pos
                self.pos += 2 if ch == "$" else 1
                self._nested(cmd, ")" if ch == "$" else "`")
                value.append(text[start : self.pos])
                plain.append(" ")
            else:
                value.append(ch)
                plain.append(ch)
                self.pos += 1
        return "".join(value), "".join(plain)


def parse_command(command: str) -> Script:
    """Read command text into scripts of pipelines of simple commands.

    :param command: shell command text, well-formed or not.
    :returns: the pipelines read; never raises.
    """
    return _Reader(command, 0).script(None)


def all_words(cmd: Command) -> list[str]:
    """Return the words of ``cmd`` and of every script nested or quoted inside it."""
    words = list(cmd.words)
    for sub in (*cmd.nested, *cmd.quoted):
        for pipeline in sub:
            for inner in pipeline:
                words.extend(all_words(inner))
    return words


def nested_words(cmd: Command) -> list[str]:
    """Return the words of the substitutions and subshells inside ``cmd`` (not quoted text)."""
    words: list[str] = []
    for sub in cmd.nested:
        for pipeline in sub:
            for inner in pipeline:
                words.extend(all_words(inner))
    return words
