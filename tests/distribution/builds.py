"""Build this project as a release would and install it into fresh virtual environments.

* :func:`build` copies the checkout's files (tracked and not ignored) into a temporary folder and
  runs ``python -m build`` there: the sdist first, then the wheel built from that sdist, so a file
  the sdist forgets is missing from the wheel too.
* :func:`wheelhouse` holds every dependency of every extra (and setuptools, for editable and
  plugin builds) as wheels in ``.ci/wheelhouse/<key>/``, downloaded once per set of requirements,
  interpreter and platform; installs then run with ``--no-index`` against it.
* :func:`upstream_wheel` downloads upstream Hermes' ``hermes-agent`` wheel once into
  ``.ci/upstream/``; it is only ever installed into a throwaway :class:`Venv`.
* :class:`Venv` is a fresh environment (``python -m venv --without-pip``) driven by this
  interpreter's pip through ``pip --python``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from tests.timing import scaled

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".ci"
UPSTREAM_VERSION = "0.19.0"
# The build backend editable installs and the docs' plugin projects need, from the wheelhouse.
BUILD_REQUIREMENTS = ("setuptools>=70.1",)


@dataclass(frozen=True)
class Built:
    """The sdist and the wheel of one build, and the checkout copy they were built from."""

    sdist: Path
    wheel: Path
    source: Path

    @property
    def folder(self) -> Path:
        """Return the folder holding both (a ``--find-links`` target)."""
        return self.wheel.parent

    def metadata(self) -> dict[str, list[str]]:
        """Return the wheel's METADATA headers, each name with all of its values."""
        with zipfile.ZipFile(self.wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            message = HeaderParser().parsestr(archive.read(name).decode("utf-8"))
        headers: dict[str, list[str]] = {}
        for key, value in message.items():
            headers.setdefault(key, []).append(value)
        return headers

    def extras(self) -> list[str]:
        """Return the extras the wheel declares, development extras left out."""
        return sorted(set(self.metadata().get("Provides-Extra", [])) - {"test"})


def run(
    argv: list[str], *, timeout: float = 600, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command, capture its output and fail the test with both when it exits non-zero."""
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=scaled(timeout), check=False, env=env, cwd=cwd
    )
    command = " ".join(map(str, argv))
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


def checkout_files() -> list[str]:
    """Return the checkout's files as git sees them: tracked, plus new ones not ignored."""
    assert shutil.which("git"), "the distribution tests copy the checkout with git ls-files: install git"
    listed = run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT).stdout
    return [name for name in listed.splitlines() if name and (ROOT / name).is_file()]


def copy_checkout(target: Path) -> Path:
    """Copy the checkout's files into ``target`` (no venv, no caches, no stale egg-info)."""
    for name in checkout_files():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)
    return target


def build(workdir: Path) -> Built:
    """Build the sdist and, from it, the wheel of a copy of this checkout.

    :param workdir: an empty folder for the copy and the results.
    """
    source = copy_checkout(workdir / "source")
    out = workdir / "dist"
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)])
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return Built(sdist=sdists[0], wheel=wheels[0], source=source)


def wheelhouse(built: Built) -> Path:
    """Return ``.ci/wheelhouse/<key>``: wheels of every dependency of every extra of ``built``.

    The key covers the wheel's requirements, the interpreter and the platform, so a change to
    the dependencies gets a new wheelhouse (downloaded once, with the network) and an unchanged
    one is reused offline.
    """
    requires = sorted(built.metadata().get("Requires-Dist", []))
    tag = f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"
    key = hashlib.sha256("\n".join([tag, *requires, *BUILD_REQUIREMENTS]).encode()).hexdigest()[:16]
    house = CACHE / "wheelhouse" / f"{tag}-{key}"
    if house.is_dir():
        return house
    partial = house.with_name(house.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    everything = f"{built.wheel}[{','.join(built.extras())}]"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    run([*pip, "wheel", "-q", "--wheel-dir", str(partial), everything, *BUILD_REQUIREMENTS], timeout=900)
    for ours in partial.glob(built.wheel.name):
        ours.unlink()
    try:
        partial.rename(house)
    except OSError:  # another run finished first: keep its copy
        shutil.rmtree(partial, ignore_errors=True)
    for stale in house.parent.glob(f"{tag}-*"):  # the wheelhouses of older requirements
        if stale != house and ".partial-" not in stale.name:
            shutil.rmtree(stale, ignore_errors=True)
    return house


def upstream_wheel() -> Path:
    """Return upstream's ``hermes-agent`` wheel, downloaded once into ``.ci/upstream``."""
    folder = CACHE / "upstream"
    found = sorted(folder.glob(f"hermes_agent-{UPSTREAM_VERSION}-*.whl"))
    if not found:
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
        wanted = f"hermes-agent=={UPSTREAM_VERSION}"
        run(
            [*pip, "download", "-q", "--no-deps", "--only-binary", ":all:", "--dest", str(folder), wanted],
            timeout=900,
        )
        found = sorted(folder.glob(f"hermes_agent-{UPSTREAM_VERSION}-*.whl"))
    assert found, f"pip download hermes-agent=={UPSTREAM_VERSION} left no wheel in {folder}"
    return found[0]


def clean_env(home: Path) -> dict[str, str]:
    """Return this environment without Hermes settings or a PYTHONPATH, with its own HERMES_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "ANTHROPIC_"))}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    env["HERMES_HOME"] = str(home)
    return env


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment and the local package folders its installs resolve from."""

    path: Path
    links: tuple[Path, ...]

    @classmethod
    def create(cls, path: Path, *links: Path) -> Venv:
        """Create an empty environment (no pip of its own: this interpreter's pip serves it)."""
        run([sys.executable, "-m", "venv", "--without-pip", str(path)], timeout=120)
        (path / "home").mkdir()
        return cls(path=path, links=links)

    @property
    def python(self) -> Path:
        """Return the environment's interpreter."""
        return self.path / "bin" / "python"

    @property
    def env(self) -> dict[str, str]:
        """Return the environment commands in this venv run with."""
        return clean_env(self.path / "home")

    def pip(self, *args: str, offline: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``pip ARGS`` for this environment, resolving only from :attr:`links` when offline."""
        local = ["--no-index", *(f"--find-links={link}" for link in self.links)] if offline else []
        argv = [sys.executable, "-m", "pip", "--python", str(self.python), *args]
        if args and args[0] == "install":
            argv += ["--quiet", "--no-compile", "--disable-pip-version-check", *local]
        return run(argv, env=self.env, timeout=600)

    def hermes(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run this environment's ``hermes`` (whatever check the caller makes of the result)."""
        return subprocess.run(
            [str(self.path / "bin" / "hermes"), *args],
            env=self.env,
            cwd=str(cwd or self.path / "home"),
            capture_output=True,
            text=True,
            timeout=scaled(120),
            check=False,
        )

    def installed(self) -> dict[str, str]:
        """Return ``normalised name → version`` of every distribution installed here."""
        code = "import importlib.metadata as m\nfor d in m.distributions(): print(d.name, d.version)"
        installed = {}
        for line in run([str(self.python), "-c", code], env=self.env).stdout.splitlines():
            name, version = line.split()
            installed[re.sub(r"[-_.]+", "-", name).lower()] = version
        return installed

    def site_packages(self) -> Path:
        """Return the environment's site-packages folder."""
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        return Path(run([str(self.python), "-c", code], env=self.env).stdout.strip())
