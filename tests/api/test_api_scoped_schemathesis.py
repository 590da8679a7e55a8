"""Schemathesis once per scope (docs/reference/api-server.md#the-scope-table): with a key holding
only that scope, every operation of the OpenAPI document still answers as documented (a refused
scope is a documented 403 with the envelope), never a server error."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from hermes_core import ACCESS_SCOPES
from tests.api.test_api_discovery import SCHEMATHESIS
from tests.api.test_api_scoped_keys import http_key

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.mark.timeout(600)
async def test_schemathesis_once_per_scope(make_server: Any) -> None:
    assert SCHEMATHESIS is not None, "schemathesis is missing: pip install -e '.[test]'"
    srv = make_server()
    for scope in ACCESS_SCOPES:
        key = await http_key(srv, "acme", [scope])
        result = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                f"{srv.base}/openapi.json",
                "--checks",
                CHECKS,
                "--max-examples",
                "3",
                "--header",
                f"Authorization: Bearer {key['secret']}",
                "--request-timeout",
                "20",
            ],
            capture_output=True,
            text=True,
            timeout=140,
            env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
            check=False,
        )
        assert result.returncode == 0, f"scope {scope}:\n" + result.stdout[-6000:] + result.stderr[-2000:]
