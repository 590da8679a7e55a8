"""Read an image from the clipboard of the machine the gateway runs on (``clipboard.paste``,
docs/reference/tui-gateway.md#terminal-and-attachments).

Each platform's tool is tried when it is on ``PATH``, each with a 3 s limit: Wayland ``wl-paste``,
X11 ``xclip``, macOS ``pngpaste`` or ``osascript``, and Windows or WSL ``powershell.exe``. The
outcome says truthfully why nothing was pasted: no tool at all, no image on the clipboard, or
every tool failing (typically: no display).
"""

from __future__ import annotations

import base64
import binascii
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

TIMEOUT_S = 3.0
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Windows PowerShell 5.1 returns a System.Drawing.Bitmap; print it as base64 PNG (nothing if no image).
_POWERSHELL = (
    "$ErrorActionPreference='Stop';"
    "Add-Type -AssemblyName System.Drawing;"
    "$i = Get-Clipboard -Format Image;"
    "if ($i) { $m = New-Object System.IO.MemoryStream;"
    " $i.Save($m, [System.Drawing.Imaging.ImageFormat]::Png);"
    " [Convert]::ToBase64String($m.ToArray()) }"
)
_OSA_DATA = re.compile("«data PNGf([0-9A-Fa-f]*)»".encode())


def _raw(out: bytes) -> bytes | None:
    return out if out.startswith(PNG_MAGIC) else None


def _osascript(out: bytes) -> bytes | None:
    # AppleScript prints the data as «data PNGf89504E47…»; its absence means no PNG is on the clipboard.
    found = _OSA_DATA.search(out)
    if found is None:
        return None
    try:
        return _raw(binascii.unhexlify(found.group(1)))
    except (binascii.Error, ValueError):
        return None


def _base64(out: bytes) -> bytes | None:
    text = b"".join(out.split())
    if not text:
        return None
    try:
        return _raw(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Reader:
    """One way to read a PNG from a clipboard tool's standard output."""

    argv: tuple[str, ...]
    decode: Callable[[bytes], bytes | None]


READERS: tuple[Reader, ...] = (
    Reader(("wl-paste", "--no-newline", "--type", "image/png"), _raw),
    Reader(("xclip", "-selection", "clipboard", "-t", "image/png", "-o"), _raw),
    Reader(("pngpaste", "-"), _raw),
    Reader(("osascript", "-e", "the clipboard as «class PNGf»"), _osascript),
    Reader(("powershell.exe", "-NoProfile", "-NonInteractive", "-Command", _POWERSHELL), _base64),
)


@dataclass(slots=True)
class Grab:
    """What reading the clipboard found: PNG bytes, or the reason there are none."""

    png: bytes | None
    message: str


def grab_png(readers: tuple[Reader, ...] = READERS) -> Grab:
    """Try each available clipboard tool in turn and return the first PNG image.

    :param readers: the tools to try, in order.
    :returns: the image, or ``png=None`` with a message saying why nothing was pasted.
    """
    tried: list[str] = []
    failures: list[str] = []
    answered = False
    for reader in readers:
        exe = shutil.which(reader.argv[0])
        if exe is None:
            continue
        tried.append(reader.argv[0])
        try:
            done = subprocess.run(
                [exe, *reader.argv[1:]],
                capture_output=True,
                timeout=TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            failures.append(f"{reader.argv[0]} timed out")
            continue
        except OSError as exc:
            failures.append(f"{reader.argv[0]}: {exc.strerror or exc}")
            continue
        if done.returncode == 0:
            answered = True
            png = reader.decode(done.stdout)
            if png is not None:
                return Grab(png, "")
            continue
        # Clipboard tools exit non-zero both for "no image of that type" and for "no display".
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        failures.append(f"{reader.argv[0]}: {first[0][:160] if first else f'exit {done.returncode}'}")
    if not tried:
        return Grab(None, "no clipboard available on this machine")
    if answered:
        return Grab(None, "the clipboard holds no image")
    return Grab(None, "no clipboard image available (" + "; ".join(failures) + ")")
