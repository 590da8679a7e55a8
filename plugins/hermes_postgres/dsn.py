"""Name a PostgreSQL server in messages without its password, and explain connection failures."""

from __future__ import annotations

from typing import Any


def describe_server(dsn: str) -> str:
    """Return ``host:port/dbname`` for messages and health reports (never the user's password).

    :param dsn: a URL or key/value connection string.
    :returns: what is safe to show.
    """
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts: dict[str, Any] = conninfo_to_dict(dsn)
    except Exception:
        return "the configured PostgreSQL server"
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = parts.get("port") or "5432"
    dbname = parts.get("dbname") or parts.get("user") or ""
    return f"{host}:{port}/{dbname}"


def scrub(text: str, dsn: str) -> str:
    """Remove the DSN and its password from an error text.

    :param text: what the driver said.
    :param dsn: the connection string.
    :returns: the text with secrets replaced by ``***``.
    """
    secrets = [dsn]
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
        if password:
            secrets.append(str(password))
    except Exception:
        pass
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def advice(text: str) -> str:
    """Say what to check for a connection failure the driver described.

    :param text: the driver's message.
    :returns: a hint, or ``""``.
    """
    lowered = text.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return "check the user and password in HERMES_POSTGRES_DSN / storage.dsn"
    if "does not exist" in lowered and "database" in lowered:
        return "create the database first (createdb) or fix the name in the DSN"
    if "connection refused" in lowered or "could not connect" in lowered or "timeout" in lowered:
        return "check that PostgreSQL is running and reachable at that address"
    if "too many clients" in lowered or "remaining connection slots" in lowered:
        return "the server is out of connections: lower storage.pool_size or raise max_connections"
    return "check HERMES_POSTGRES_DSN / storage.dsn"
