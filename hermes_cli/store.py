"""``FileSettingsStore``: the :class:`hermes_core.SettingsStore` over ``config.toml`` and ``.env``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_cli.config_file import get_dotted, nul_key, read_config, set_dotted, write_config
from hermes_cli.dotenv import merged_environment, read_dotenv, write_dotenv_entry
from hermes_cli.paths import HermesPaths, resolve_paths
from hermes_cli.settings_loader import core_mapping
from hermes_core.errors import ConfigError

if TYPE_CHECKING:
    from hermes_core.registry import Registry


class FileSettingsStore:
    """Reads and writes Hermes settings in ``config.toml`` and ``.env``.

    :param paths: where the files live (from ``HERMES_HOME`` or platformdirs when omitted).
    :param environ: the real environment (``os.environ``, read at each call, when omitted).
    """

    def __init__(self, paths: HermesPaths | None = None, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self.paths = paths or resolve_paths(self.real_environment())
        self.config_path: Path | None = self.paths.config_path
        self.env_path: Path | None = self.paths.env_path
        self.registry: Registry | None = None
        self.warnings: list[str] = []

    def bind(self, registry: Registry) -> None:
        """Attach the plugin registry so provider and transport keys can be checked and filled."""
        self.registry = registry

    def real_environment(self) -> Mapping[str, str]:
        """Return the process environment (or the one given at construction)."""
        return os.environ if self._environ is None else self._environ

    def environment(self) -> dict[str, str]:
        """Re-read ``.env`` and return it with the real environment layered on top.

        Problems in ``.env`` are added to :attr:`warnings` (each once).
        """
        dotenv = read_dotenv(self.paths.env_path)
        for warning in dotenv.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        return merged_environment(dotenv.values, self.real_environment())

    def read_config(self) -> dict[str, Any]:
        """Parse ``config.toml`` (empty when missing).

        :raises hermes_cli.config_file.ConfigFileError: naming the file and line.
        """
        return read_config(self.paths.config_path)

    def get(self, key: str) -> Any:
        """Return the ``config.toml`` value at a dotted key, or None."""
        return get_dotted(self.read_config(), key)

    def set(self, key: str, value: Any) -> None:
        """Check one dotted key and its value, then write it to ``config.toml`` atomically.

        ``None`` removes the key.

        :raises hermes_core.errors.ConfigError: unknown key, wrong type or unreadable file;
            nothing is written then.
        """
        from hermes_cli.keys import resolve_key

        info = resolve_key(key, self.registry)
        checked = info.validate(value)
        if nul_key(checked, key) is not None:
            raise ConfigError(f"{key}: the value contains a NUL character")
        data = self.read_config()
        if checked is None:
            if not _delete_dotted(data, key):
                return
        else:
            set_dotted(data, key, checked)
        write_config(self.paths.config_path, data)

    def set_env(self, name: str, value: str) -> None:
        """Write ``NAME="value"`` to ``.env``.

        :raises hermes_core.errors.InvalidValue: a value with a line break, before writing.
        """
        write_dotenv_entry(self.paths.env_path, name, value)

    def load(self) -> dict[str, Any]:
        """Re-read the files and environment; return the raw mapping for ``CoreSettings``.

        :raises hermes_cli.config_file.ConfigFileError: ``config.toml`` is malformed.
        """
        return core_mapping(self.read_config(), self.environment(), self.registry, self.paths.data_dir)


def _delete_dotted(data: dict[str, Any], key: str) -> bool:
    """Remove a dotted key; return whether it was there."""
    *parents, last = key.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    return False
