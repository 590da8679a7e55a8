"""``hermes config path|get|set``: read and write ``config.toml``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from hermes_cli import event_loop
from hermes_cli.failures import EXIT_FAILURE, error_line, guarded
from hermes_cli.state import CliState, get_state

if TYPE_CHECKING:
    from hermes_cli.keys import KeyInfo


def _needs_plugins(key: str) -> bool:
    """Return whether checking ``key`` needs the plugin registry (provider or transport keys)."""
    from hermes_core.settings import CoreSettings

    parts = key.split(".")
    if parts[0] == "providers":
        return len(parts) > 1 and parts[1] != "custom"
    return parts[0] not in CoreSettings.model_fields


def _key_info(state: CliState, key: str) -> KeyInfo:
    from hermes_cli.keys import resolve_key

    if _needs_plugins(key):
        state.store.bind(state.kernel.registry)
    return resolve_key(key, state.store.registry)


def render_value(value: Any) -> str:
    """Show a config value the way it would be typed: TOML for non-strings, strings as they are."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        import tomli_w

        return tomli_w.dumps(value).rstrip("\n")
    import tomli_w

    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


@click.group("config")
def config_group() -> None:
    """Read and write config.toml."""


@config_group.command("path")
@click.option("--config", "only", flag_value="config", help="Print only the path of config.toml.")
@click.option("--env", "only", flag_value="env", help="Print only the path of .env.")
@click.pass_context
def path_command(ctx: click.Context, only: str | None) -> None:
    """Print where config.toml and .env live (whether or not they exist yet)."""
    paths = get_state(ctx).store.paths
    if only == "config":
        click.echo(str(paths.config_path))
    elif only == "env":
        click.echo(str(paths.env_path))
    else:
        click.echo(f"config.toml: {paths.config_path}")
        click.echo(f".env:        {paths.env_path}")


@config_group.command("get")
@click.argument("key")
@click.pass_context
def get_command(ctx: click.Context, key: str) -> None:
    """Print the value of KEY (a dotted key such as agent.max_tool_rounds).

    An unset key prints its default; a key without one exits 1.
    """
    state = get_state(ctx)

    def body() -> int:
        info = _key_info(state, key)
        value = state.store.get(key)
        if value is None:
            value = info.default
        if value is None:
            error_line(f"{key} is not set")
            return EXIT_FAILURE
        click.echo(render_value(value))
        return 0

    ctx.exit(guarded(body))


@config_group.command("set")
@click.argument("key")
@click.argument("value")
@click.pass_context
def set_command(ctx: click.Context, key: str, value: str) -> None:
    """Set KEY to VALUE in config.toml.

    VALUE is read as the key's type: text for strings and paths, TOML for the rest
    (5, 2.5, true, ["a", "b"]). An unknown key or a bad value writes nothing.
    """
    state = get_state(ctx)

    def body() -> int:
        info = _key_info(state, key)
        parsed = info.parse_text(value)
        if key == "model" and isinstance(parsed, str):
            _check_model(state, parsed)
        state.store.set(key, parsed)
        return 0

    ctx.exit(guarded(body))


def _check_model(state: CliState, ref: str) -> None:
    """Resolve ``ref`` as the kernel will, so an unknown provider or model writes nothing.

    The kernel starts with storage opened read-only: checking creates and changes nothing.

    :raises hermes_core.errors.HermesError: the reference does not resolve (ambiguous, unknown).
    """

    from hermes_cli.settings_loader import apply_model_flag

    kernel = state.kernel  # first: it binds the plugins, so provider keys come from env and .env
    raw = apply_model_flag(state.store.load(), ref)
    storage = raw.get("storage")
    raw["storage"] = {**(storage if isinstance(storage, dict) else {}), "read_only": True}
    kernel.configure(raw)

    async def resolve() -> None:
        async with kernel.running():
            await kernel.resolve_model(ref)

    event_loop.run(resolve())
