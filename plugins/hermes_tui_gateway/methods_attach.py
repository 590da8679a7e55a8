"""Image attachments (docs/reference/tui-gateway.md#terminal-and-attachments): ``image.attach`` and
``clipboard.paste``."""

from __future__ import annotations

import secrets
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import expand_home
from hermes_tui_gateway import clipboard, images
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_cmds as wr
from hermes_tui_gateway.encode import token_estimate
from hermes_tui_gateway.params import SAFE_NAME, GatewayError

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params


MAX_IMAGE = 20 * 1024 * 1024


def _split_path(raw: str) -> tuple[str, str]:
    text = raw.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end > 0:
            return text[1:end], text[end + 1 :].strip()
    if _exists(text):
        return text, ""
    try:
        parts = shlex.split(text)
    except ValueError:
        parts = text.split()
    head = parts[0] if parts else ""
    rest = text[len(head) :].strip() if text.startswith(head) else " ".join(parts[1:])
    return head, rest


def _exists(text: str) -> bool:
    """Whether ``text`` names an existing file as it is (a name too long names none)."""
    try:
        return expand_home(text).exists()
    except OSError:
        return False


def _attach(gw: Gateway, live: Any, path: Path) -> wr.Attached:
    try:
        is_file = path.is_file()
    except OSError as exc:  # e.g. a name too long for the file system: no such file either way
        raise GatewayError(4016, f"file not found or not a file: {path} ({exc.strerror or exc})") from None
    if not is_file:
        raise GatewayError(4016, f"file not found or not a file: {path}")
    found = images.sniff(path)
    if found is None:
        raise GatewayError(4016, "unsupported image (png, jpeg, gif or webp)")
    if path.stat().st_size > MAX_IMAGE:
        raise GatewayError(4018, "attachment too large (over 20 MiB)")
    mime, width, height = found
    live.attachments.append({"path": str(path), "mime": mime})
    out: wr.Attached = {
        "attached": True,
        "path": str(path),
        "count": len(live.attachments),
        "name": path.name,
    }
    if width and height:
        out["width"], out["height"] = width, height
        out["token_estimate"] = token_estimate(width, height)
    else:
        out["token_estimate"] = 85
    return out


async def image_attach(gw: Gateway, conn: Conn, p: Params) -> wr.Attached:
    """``image.attach``: attach an image file to the next turn."""
    q = wp.parse(wp.ImageAttachParams, p)
    live = await gw.live_checked(q.session_id)
    raw = q.path
    if not raw or not raw.strip():
        raise GatewayError(4015, "path required")
    if "\x00" in raw:
        raise GatewayError(
            4002, "path is not a valid file path: it contains a NUL character", {"key": "path"}
        )
    path_text, remainder = await gw.run_blocking(_split_path, raw)  # it may look at the disk
    path = expand_home(path_text)
    if not path.is_absolute():
        path = Path(live.session.info().cwd) / path
    try:
        out = await gw.run_blocking(_attach, gw, live, path)
    except OSError as exc:
        raise GatewayError(5027, f"image I/O failed: {exc.strerror or exc}") from exc
    out["remainder"] = remainder
    out["text"] = remainder
    return out


def _save_clipboard(folder: Path) -> Path | str:
    """Return the saved clipboard image, or the message saying why there is none."""
    found = clipboard.grab_png()
    if found.png is None:
        return found.message
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"clipboard-{int(time.time())}-{secrets.token_hex(2)}.png"
    path.write_bytes(found.png)
    return path


async def clipboard_paste(gw: Gateway, conn: Conn, p: Params) -> wr.Attached:
    """``clipboard.paste``: an image from this machine's clipboard, or ``attached:false``."""
    live = await gw.live_checked(wp.parse(wp.SessionParams, p).session_id)
    folder = gw.data_dir / "attachments" / SAFE_NAME.sub("_", live.session.id)
    try:
        saved = await gw.run_blocking(_save_clipboard, folder)
    except OSError as exc:
        raise GatewayError(5027, f"clipboard I/O failed: {exc.strerror or exc}") from exc
    if isinstance(saved, str):
        return {"attached": False, "message": saved}
    return await gw.run_blocking(_attach, gw, live, saved)


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.slow.update({"clipboard.paste": bind(clipboard_paste), "image.attach": bind(image_attach)})
