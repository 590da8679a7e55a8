"""Run nginx with the configuration docs/deploy.md documents (``docs/deploy/nginx.conf``).

The file is used as printed, with the example instance ports and listen address replaced by the
caller's; a small main configuration around it keeps nginx's pid, logs and temporary files in a
folder of the caller's, so it runs unprivileged. Used by the multi-instance tests and by
``bench/bench_scaleout.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

SITE = Path(__file__).resolve().parents[1] / "docs" / "deploy" / "nginx.conf"
_SERVERS = re.compile(r"^(\s*)server 127\.0\.0\.1:\d+;\n(?:\s*server 127\.0\.0\.1:\d+;\n)*", re.M)
_LISTEN = re.compile(r"^(\s*)listen 127\.0\.0\.1:\d+;", re.M)
MAIN = """worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  include {prefix}/hermes.conf;
}}
"""


def site_config(upstream_ports: Sequence[int], port: int) -> str:
    """Return the documented configuration with these instance ports and listen port."""
    text = SITE.read_text(encoding="utf-8")
    text, upstreams = _SERVERS.subn(
        lambda m: "".join(f"{m.group(1)}server 127.0.0.1:{p};\n" for p in upstream_ports), text
    )
    text, listens = _LISTEN.subn(lambda m: f"{m.group(1)}listen 127.0.0.1:{port};", text)
    if (upstreams, listens) != (1, 1):
        raise ValueError(f"{SITE} no longer has one upstream server list and one 127.0.0.1 listen line")
    return text


def write_config(prefix: Path, upstream_ports: Sequence[int], port: int) -> Path:
    """Write the main and the documented configuration into ``prefix``; return the main one."""
    prefix.mkdir(parents=True, exist_ok=True)
    os.chmod(prefix, 0o777)  # nginx's worker may run as another user when started by root
    (prefix / "hermes.conf").write_text(site_config(upstream_ports, port), encoding="utf-8")
    main = prefix / "nginx.conf"
    main.write_text(MAIN.format(prefix=prefix), encoding="utf-8")
    return main


def start_nginx(
    binary: str, prefix: Path, upstream_ports: Sequence[int], port: int
) -> subprocess.Popen[bytes]:
    """Start nginx in the foreground on ``127.0.0.1:port`` in front of ``upstream_ports``."""
    main = write_config(prefix, upstream_ports, port)
    return subprocess.Popen(
        [binary, "-p", str(prefix), "-c", str(main), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
