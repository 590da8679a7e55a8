"""Where Hermes keeps its files (docs/reference/core.md#settings, "Locations").

With ``HERMES_HOME`` set, that one directory holds ``config.toml``, ``.env`` and all data.
Otherwise the config file and ``.env`` live in the platformdirs user config dir and data
(database, logs, keys, ``approvals.json``, workspaces) in the user data dir.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "hermes"


@dataclass(frozen=True, slots=True)
class HermesPaths:
    """The directories and files Hermes reads and writes.

    :param config_dir: holds ``config.toml`` and ``.env``.
    :param data_dir: holds the database, logs, keys, ``approvals.json`` and workspaces.
    """

    config_dir: Path
    data_dir: Path

    @property
    def config_path(self) -> Path:
        """Return the path of ``config.toml``."""
        return self.config_dir / "config.toml"

    @property
    def env_path(self) -> Path:
        """Return the path of ``.env``."""
        return self.config_dir / ".env"


def resolve_paths(environ: Mapping[str, str] | None = None) -> HermesPaths:
    """Work out the config and data directories from ``HERMES_HOME`` or platformdirs.

    :param environ: the process environment (``os.environ`` when omitted).
    :returns: the paths; nothing is created on disk.
    """
    env = os.environ if environ is None else environ
    home = env.get("HERMES_HOME", "").strip()
    if home:
        root = Path(home).expanduser().absolute()
        return HermesPaths(config_dir=root, data_dir=root)
    import platformdirs

    return HermesPaths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
    )


def home_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Return why ``HERMES_HOME`` cannot hold Hermes's files, or None when it can.

    A path that does not exist yet is fine (it is created on first write); a path that is, or
    lies under, something other than a directory is not.
    """
    env = os.environ if environ is None else environ
    home = env.get("HERMES_HOME", "").strip()
    if not home:
        return None
    root = Path(home).expanduser().absolute()
    for path in (root, *root.parents):
        if path.is_dir():
            return None
        if path.exists() or path.is_symlink():
            if path == root:
                return f"HERMES_HOME must be a directory, but {root} is a file"
            return f"HERMES_HOME must be a directory, but {path} (on the way to {root}) is a file"
    return None
