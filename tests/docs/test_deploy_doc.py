"""docs/deploy.md's nginx configuration is one file, ``docs/deploy/nginx.conf``, and the tests and
the bench run exactly that file with only their ports put in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.docs import snippets
from tests.nginx_front import SITE, site_config, write_config
from tests.services import nginx_binary


def test_the_deploy_page_points_at_the_configuration_file() -> None:
    page = (snippets.DOCS / "deploy.md").read_text(encoding="utf-8")
    assert "](deploy/nginx.conf)" in page and SITE == snippets.DOCS / "deploy" / "nginx.conf"
    assert "```nginx" not in page  # no second copy to drift away from the file


def test_only_the_ports_change_between_the_documented_and_the_run_configuration() -> None:
    documented = SITE.read_text(encoding="utf-8").splitlines()
    run = site_config([41001, 41002], 41000).splitlines()
    assert len(run) == len(documented) - 1  # three example instances, two here
    listens = [line.split("#")[0].strip() for line in run if line.strip().startswith("listen ")]
    assert listens == ["listen 127.0.0.1:41000;"]
    servers = [line.strip() for line in run if line.strip().startswith("server 127.")]
    assert servers == ["server 127.0.0.1:41001;", "server 127.0.0.1:41002;"]
    rest = [line for line in run if not line.strip().startswith(("server 127.", "listen "))]
    assert rest == [line for line in documented if not line.strip().startswith(("server 127.", "listen "))]
    for needed in ("keepalive 16;", "proxy_http_version 1.1;", 'proxy_set_header Connection "";'):
        assert any(line.strip().startswith(needed) for line in rest), needed
    assert any(line.strip().startswith("proxy_buffering off;") for line in rest)


def test_a_configuration_without_the_example_lines_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = tmp_path / "nginx.conf"
    changed.write_text(SITE.read_text(encoding="utf-8").replace("listen 127.0.0.1:8080;", "listen 80;"))
    monkeypatch.setattr("tests.nginx_front.SITE", changed)
    with pytest.raises(ValueError, match="listen line"):
        site_config([41001], 41000)


def test_nginx_accepts_the_configuration_the_tests_run(tmp_path: Path) -> None:
    main = write_config(tmp_path / "nginx", [41001, 41002, 41003], 41000)
    checked = subprocess.run(
        [nginx_binary(), "-t", "-p", str(main.parent), "-c", str(main)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stderr
