"""The settings-store protocol: how the core and transports persist settings.

``hermes_cli`` implements it over ``config.toml`` (tomllib / tomli-w, atomic, mode 0600) and
``.env``; :mod:`hermes_core.testing` has an in-memory one. The kernel never touches the files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol


class SettingsStore(Protocol):
    """Reads and writes persistent settings."""

    config_path: Path | None
    env_path: Path | None

    def get(self, key: str) -> Any:
        """Return the ``config.toml`` value at a dotted key, or None."""
        ...

    def set(self, key: str, value: Any) -> None:
        """Write one dotted key to ``config.toml`` atomically; raise ``ConfigError`` if invalid."""
        ...

    def set_env(self, name: str, value: str) -> None:
        """Write ``NAME="value"`` to ``.env``; a value with a newline raises ``InvalidValue``."""
        ...

    def load(self) -> Mapping[str, Any]:
        """Re-read files and environment; return the raw settings mapping for ``CoreSettings``."""
        ...
