"""Guarded command patterns (docs/reference/core.md#fixed-asks): which published patterns a command matches.

A guard must see a dangerous word wherever it hides in the command text: after ``;``, ``&&``,
``||`` or ``|``, in subshells and substitutions, and inside quoted text such as the script of
``sh -c '…'``. The text is read by :mod:`hermes_core.approvals.shell`, which never raises and
re-reads every quoted string containing spaces or operators as a command of its own.

That choice fails closed on purpose: ``echo rm -rf x`` and ``git commit -m "drop sudo"`` match
too, because "words anywhere in the command text" cannot tell data from code. Comments are
scanned like everything else for the same reason. A few spellings with the same effect as a
published pattern match as well: ``/bin/rm``, ``--recursive``/``--force`` prefixes, ``0777``,
``git push origin +main`` and ``bash <(curl …)``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from hermes_core.approvals.shell import Script, all_words, nested_words, parse_command

__all__ = ["GUARD_PATTERNS", "GuardPattern", "command_names", "match_guards"]


@dataclass(frozen=True, slots=True)
class GuardPattern:
    """One published guarded-command pattern.

    :param id: the pattern id, used in ``guard:<id>`` approval keys.
    :param description: what the pattern matches, for humans.
    """

    id: str
    description: str


GUARD_PATTERNS: tuple[GuardPattern, ...] = (
    GuardPattern("rm -rf", "rm with both a recursive and a force flag"),
    GuardPattern("sudo", "the word sudo"),
    GuardPattern("mkfs", "mkfs or mkfs.<type>"),
    GuardPattern("dd of=/dev", "dd writing to a device (of=/dev/…)"),
    GuardPattern("chmod -R 777", "chmod -R with mode 777"),
    GuardPattern("curl | sh", "curl or wget piped into sh, bash, zsh or python"),
    GuardPattern("git push --force", "git push with --force, -f or --force-with-lease"),
    GuardPattern("shutdown", "shutdown, reboot, halt or poweroff"),
    GuardPattern("hermes-guard-test", "the word hermes-guard-test (harmless; for tests)"),
)

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_MKFS = re.compile(r"mkfs(\.[A-Za-z0-9_+-]+)?")
_PYTHON = re.compile(r"python[0-9.]*")
_MODE_777 = re.compile(r"0*777")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "eval"})
_PIPE_SHELLS = frozenset({"sh", "bash", "zsh"})
_DOWNLOADERS = frozenset({"curl", "wget"})
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})


def _name(word: str) -> str:
    """Return the command name a word would run (``/usr/bin/rm`` → ``rm``)."""
    return word.rsplit("/", 1)[-1]


def _short_flags(word: str) -> str:
    """Return the letters of a short-option group (``-rf`` → ``rf``), or ``""``."""
    if len(word) > 1 and word[0] == "-" and word[1] != "-":
        return word[1:]
    return ""


def _long_flag(word: str) -> str:
    """Return the name of a long option (``--force=x`` → ``force``), or ``""``."""
    if word.startswith("--") and len(word) > 2:
        return word[2:].split("=", 1)[0]
    return ""


def _rm_forced(args: list[str]) -> bool:
    recursive = force = False
    for arg in args:
        if arg == "--":  # the rest are file names
            break
        letters = _short_flags(arg)
        recursive = recursive or "r" in letters or "R" in letters
        force = force or "f" in letters
        # GNU getopt accepts any unambiguous prefix; rm has one long option per letter here.
        long = _long_flag(arg)
        recursive = recursive or (bool(long) and "recursive".startswith(long))
        force = force or (bool(long) and "force".startswith(long))
    return recursive and force


def _chmod_recursive_777(args: list[str]) -> bool:
    recursive = mode = False
    options_done = False
    for arg in args:
        if arg == "--":
            options_done = True
            continue
        if not options_done:
            long = _long_flag(arg)
            # chmod's symbolic modes (-w) never contain R, so R in a dash word is the flag.
            if "R" in _short_flags(arg) or (len(long) >= 3 and "recursive".startswith(long)):
                recursive = True
                continue
        mode = mode or bool(_MODE_777.fullmatch(arg))
    return recursive and mode


def _git_force_push(args: list[str]) -> bool:
    if "push" not in args:
        return False
    for arg in args[args.index("push") + 1 :]:
        if arg in ("--force", "--force-with-lease") or arg.startswith("--force-with-lease="):
            return True
        if "f" in _short_flags(arg):
            return True
        if len(arg) > 1 and arg[0] == "+":  # a +refspec forces that ref
            return True
    return False


def _dd_to_device(args: list[str]) -> bool:
    for arg in args:
        if arg.startswith("of="):
            # of=//dev//sda and of=/./dev/sda name the same device.
            target = posixpath.normpath(re.sub(r"/+", "/", arg[3:] or "."))
            if target.startswith("/dev/") or arg.startswith("of=/dev/"):
                return True
    return False


def _match_words(words: list[str], found: set[str]) -> None:
    for index, word in enumerate(words):
        name = _name(word)
        rest = words[index + 1 :]
        if name == "rm" and _rm_forced(rest):
            found.add("rm -rf")
        elif name == "sudo":
            found.add("sudo")
        elif _MKFS.fullmatch(name):
            found.add("mkfs")
        elif name == "dd" and _dd_to_device(rest):
            found.add("dd of=/dev")
        elif name == "chmod" and _chmod_recursive_777(rest):
            found.add("chmod -R 777")
        elif name == "git" and _git_force_push(rest):
            found.add("git push --force")
        elif name in _POWER:
            found.add("shutdown")
        elif name == "hermes-guard-test":
            found.add("hermes-guard-test")


def _is_pipe_shell(word: str) -> bool:
    name = _name(word)
    return name in _PIPE_SHELLS or bool(_PYTHON.fullmatch(name))


def _scan(script: Script, found: set[str]) -> None:
    for pipeline in script:
        downloading = False
        for cmd in pipeline:
            words = all_words(cmd)
            if downloading and any(_is_pipe_shell(w) for w in words):
                found.add("curl | sh")
            if any(_name(w) in _DOWNLOADERS for w in words):
                downloading = True
            # sh <(curl …) and bash -c "$(curl …)" feed a download to a shell without a pipe.
            if any(_is_pipe_shell(w) for w in cmd.words) and any(
                _name(w) in _DOWNLOADERS for w in nested_words(cmd)
            ):
                found.add("curl | sh")
            _match_words(cmd.words, found)
            for sub in (*cmd.nested, *cmd.quoted):
                _scan(sub, found)


def match_guards(command: str) -> list[str]:
    """Return the ids of the guarded patterns a command matches, in table order.

    :param command: the shell command text as the model wrote it.
    :returns: pattern ids from :data:`GUARD_PATTERNS`; empty when none match.
    """
    found: set[str] = set()
    _scan(parse_command(command), found)
    return [pattern.id for pattern in GUARD_PATTERNS if pattern.id in found]


def _first_words(script: Script, out: list[str]) -> None:
    for pipeline in script:
        for cmd in pipeline:
            words = [w for w in cmd.words if w and not _ASSIGNMENT.match(w)]
            if words and words[0] not in out:
                out.append(words[0])
            for sub in cmd.nested:
                _first_words(sub, out)
            # Quoted text is code only when a shell or eval will run it.
            if any(_name(w) in _SHELLS for w in cmd.words):
                for sub in cmd.quoted:
                    _first_words(sub, out)


def command_names(command: str) -> list[str]:
    """Return the first word of every simple command in ``command``, in order, without repeats.

    These name the ``exec:<first word>`` approval keys. Every command of a compound
    (``a && b``, ``a | b``, ``$(b)``, ``sh -c 'b'``) contributes, so that remembering
    ``exec:ls`` never lets ``ls; curl …`` through. Leading ``NAME=value`` assignments are
    skipped.

    :param command: the shell command text.
    :returns: the words, possibly empty for a blank command.
    """
    out: list[str] = []
    _first_words(parse_command(command), out)
    return out
