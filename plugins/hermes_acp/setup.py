"""``hermes acp --setup``: pick a provider, model, key and endpoint in a terminal
(docs/reference/acp.md#interactive-setup).

Every provider name the kernel knows is offered: provider plugins, their presets (``openrouter``,
``ollama``, …) and ``[[providers.custom]]`` entries. OpenAI-compatible choices also ask for the
base URL. An optional connection test makes one small request with the unsaved answers, before
anything is written. The model goes to ``config.toml`` and the key to ``.env`` through the
settings store; Ctrl-C or EOF leaves both files exactly as they were (exit 1), and a stdin that
is not a terminal exits 2 at once.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import signal
import sys
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from hermes_acp.setup_support import (
    Choice,
    FileSnapshot,
    connection_test,
    gather_choices,
    normalise_url,
)
from hermes_core import ModelRef

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import SettingsStore, TransportContext

T = TypeVar("T")
MODEL_LIST_LIMIT = 50


class _Aborted(Exception):
    """The user stopped the setup; nothing was (or remains) written."""


def _say(text: str = "") -> None:
    print(text, flush=True)


def _warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _ask(prompt: str, default: str | None = None) -> str:
    """Ask one line; an empty answer takes ``default``."""
    suffix = f" [{default}]" if default else ""
    answer = input(f"{prompt}{suffix}: ").strip()
    return answer or (default or "")


def _yes(prompt: str, default: bool) -> bool:
    """Ask a yes/no question until the answer is one of them."""
    hint = "[Y/n]" if default else "[y/N]"
    while True:
        answer = input(f"{prompt} {hint}: ").strip().lower()
        if not answer:
            return default
        if answer in ("y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
        _say("please answer y or n")


@contextmanager
def _on_interrupt(handler: Any) -> Iterator[None]:
    """Install ``handler`` for SIGINT for the duration (main thread only), then put back the old one.

    :param handler: ``signal.default_int_handler`` makes Ctrl-C raise ``KeyboardInterrupt`` in
        the prompts (``asyncio.run`` would otherwise turn it into a cancellation that a blocking
        ``input()`` only notices after the next Enter); ``signal.SIG_IGN`` holds Ctrl-C off while
        the two files are written, so they change together or not at all.
    """
    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def _interruptible(awaitable: Awaitable[T]) -> T:
    """Await while Ctrl-C cancels the wait and surfaces as ``KeyboardInterrupt``."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):
        installed = False
    try:
        return await task
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _environment(store: SettingsStore) -> tuple[dict[str, str], dict[str, str]]:
    """Return the environment the settings store sees (real over ``.env``) and the real one alone."""
    merged: dict[str, str] = {}
    real: dict[str, str] = {}
    reader = getattr(store, "environment", None)
    real_reader = getattr(store, "real_environment", None)
    try:
        merged = dict(reader()) if callable(reader) else {}
        real = dict(real_reader()) if callable(real_reader) else dict(merged)
    except Exception:
        pass
    return merged, real


def _pick_provider(choices: list[Choice], current: str | None) -> Choice:
    by_name = {c.name: c for c in choices}
    _say("Providers (* = current):")
    for index, choice in enumerate(choices, start=1):
        mark = "*" if choice.name == current else " "
        _say(f" {mark} {index:2d}. {choice.name:<14} {choice.summary}")
    while True:
        answer = _ask("Provider (number or name)", current)
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        if answer in by_name:
            return by_name[answer]
        _say(
            f"unknown provider {answer!r}; pick a number or a name from the list"
            if answer
            else "a provider is needed"
        )


def _pick_model(choice: Choice, by_name: Mapping[str, Choice], current_ref: str) -> tuple[Choice, str]:
    """Return the (possibly other, for ``provider:model``) provider and the model id."""
    offered = choice.models[:MODEL_LIST_LIMIT]
    if offered:
        _say(f"Models of {choice.name}:")
        for index, name in enumerate(offered, start=1):
            _say(f"  {index}. {name}")
    else:
        _say(f"{choice.name} lists no models offline; type the model id the server serves.")
    current = ModelRef.split(current_ref)
    default = current.model if current.provider == choice.name and current.model else None
    default = default or (offered[0] if offered else None)
    while True:
        answer = _ask("Model (number, name or provider:model)", default)
        picked = choice
        if answer.isdigit() and 1 <= int(answer) <= len(offered):
            answer = offered[int(answer) - 1]
        else:
            parsed = ModelRef.parse(answer, by_name)  # ``ollama:qwen3:8b`` names a provider
            if parsed.provider is not None:
                picked, answer = by_name[parsed.provider], parsed.model
        if not answer:
            _say("a model is needed")
            continue
        if not picked.spec.open_model_list and picked.models and answer not in picked.models:
            _say(f"{picked.name} has no model {answer!r}; it offers: {', '.join(picked.models)}")
            continue
        return picked, answer


def _pick_base_url(choice: Choice, configured: str | None, env: Mapping[str, str]) -> str | None:
    """Ask the endpoint of an OpenAI-compatible choice; None means the provider's default."""
    default = configured or choice.default_base_url
    while True:
        if default:
            answer = _ask("Base URL", default)
        else:
            answer = input("Base URL (Enter for the provider's default): ").strip()
        if not answer:
            return None
        if answer.startswith(("http://", "https://")):
            break
        _say("the base URL must start with http:// or https://")
    var = choice.base_url_var
    if var and env.get(var):
        _say(f"note: {var} is set in the environment and wins over config.toml")
    return normalise_url(answer)


def _pick_key(choice: Choice, env: Mapping[str, str], real_env: Mapping[str, str]) -> str:
    """Ask the API key with hidden input; an empty result means "store no key"."""
    var = choice.key_var
    if var is None:
        if choice.key_required:
            _say(
                f"note: {choice.name} needs a key but names no variable; set providers.{choice.name}.api_key"
            )
        else:
            _say(f"{choice.name} needs no API key.")
        return ""
    if env.get(var) and _yes(f"{var} is already set; use it?", True):
        return ""
    optional = "" if choice.key_required else ", Enter for none"
    while True:
        key = getpass.getpass(
            f"API key for {choice.name} (saved to .env as {var}; hidden{optional}): "
        ).strip()
        if key or not choice.key_required:
            break
        _say("an API key is needed (Ctrl-C to abort)")
    if key and real_env.get(var):
        _say(f"note: {var} is also set in your environment, which wins over .env")
    return key


def _write(
    store: SettingsStore,
    choice: Choice,
    ref: str,
    base_url: str | None,
    configured_url: str | None,
    key: str,
) -> None:
    """Write the answers: the model, the endpoint when it differs from the default, the key."""
    store.set("model", ref)
    if choice.asks_base_url:
        if choice.custom is not None:
            if base_url and base_url != normalise_url(str(choice.custom.get("base_url") or "")):
                entries = [dict(e) for e in store.get("providers.custom") or [] if isinstance(e, dict)]
                for entry in entries:
                    if entry.get("name") == choice.name:
                        entry["base_url"] = base_url
                store.set("providers.custom", entries)
        else:
            default = normalise_url(choice.default_base_url or "")
            wanted = None if not base_url or base_url == default else base_url
            if wanted != (normalise_url(configured_url) if configured_url else None):
                # None removes the key, so the preset's own default applies again.
                store.set(f"providers.{choice.name}.base_url", wanted)
    if key and choice.key_var:
        store.set_env(choice.key_var, key)


async def _converse(ctx: TransportContext[AcpSettings], store: SettingsStore) -> int:
    choices, catalog_current = await _interruptible(gather_choices(ctx, store))
    if not choices:
        _warn("no model provider plugin is loaded")
        return 1
    by_name = {c.name: c for c in choices}
    current_ref = str(store.get("model") or "")
    configured = ModelRef.split(current_ref).provider
    current = configured if configured in by_name else catalog_current
    current = current if current in by_name else None
    choice = _pick_provider(choices, current)
    choice, model = _pick_model(choice, by_name, current_ref)
    ref = f"{choice.name}:{model}"
    env, real_env = _environment(store)
    configured_url = choice.configured_base_url(store)
    base_url = _pick_base_url(choice, configured_url, env) if choice.asks_base_url else None
    key = _pick_key(choice, env, real_env)
    if choice.testable and _yes("Test the connection with one small request?", False):
        _say(f"testing {ref} …")
        error = await _interruptible(connection_test(choice, model, key, base_url, store, env))
        if error is None:
            _say("connection test: ok")
        else:
            _say(f"connection test failed: {error}")
            if not _yes("Keep these settings anyway?", False):
                raise _Aborted
    config_snapshot = FileSnapshot.take(store.config_path)
    env_snapshot = FileSnapshot.take(store.env_path)
    with _on_interrupt(signal.SIG_IGN):
        try:
            _write(store, choice, ref, base_url, configured_url, key)
        except BaseException:
            config_snapshot.restore()
            env_snapshot.restore()
            raise
    _say(f"wrote {store.config_path}")
    if key:
        _say(f"wrote {store.env_path}")
    else:
        _say(f"left {store.env_path} unchanged (no key to store)")
    if env.get("HERMES_MODEL"):
        _say("note: HERMES_MODEL is set in the environment and wins over config.toml")
    return 0


async def run_setup(ctx: TransportContext[AcpSettings]) -> int:
    """Run the interactive setup.

    :param ctx: the transport context.
    :returns: 0 written, 1 aborted or failed, 2 stdin is not a terminal.
    """
    if not os.isatty(0):
        _warn("hermes acp --setup needs a terminal on stdin")
        return 2
    store = ctx.store
    if store is None:
        _warn("no settings store available")
        return 1
    with _on_interrupt(signal.default_int_handler):
        try:
            return await _converse(ctx, store)
        except (KeyboardInterrupt, EOFError, _Aborted):
            _warn("\nsetup aborted; nothing was written")
            return 1
        except Exception as exc:
            from hermes_core import redact

            _warn(f"setup failed; nothing was written: {redact(str(exc)) or type(exc).__name__}")
            return 1
