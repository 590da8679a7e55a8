"""What every storage backend does the same way, written once: column lists, the mapping from
``SessionRecord`` / ``NewRow`` values to column values and back, and listing pages.

Standard library only, no database library: a backend keeps its SQL and its driver and calls
these for the backend-neutral part. See docs/writing-plugins.md, "Storage backends".

* :mod:`~hermes_core.storage_kit.json_columns` — JSON text columns: :func:`dump_json`,
  :func:`decode_json`, mappings, read-only row metas (:func:`load_meta` / :func:`dump_meta`,
  :class:`ReadOnlyDict`) and content parts (:func:`dump_parts` / :func:`load_parts`);
* :mod:`~hermes_core.storage_kit.sessions` — :data:`SESSION_COLUMNS`, :func:`session_params`,
  :func:`session_value`, :func:`session_from_values`, and listing pages (:class:`SessionListing`,
  :func:`check_limit`, :func:`session_page`, :func:`encode_cursor` / :func:`decode_cursor`);
* :mod:`~hermes_core.storage_kit.reconnect` — :class:`PoolCheck` and :func:`retried`, for a
  pooled backend whose server dropped its connections;
* :mod:`~hermes_core.storage_kit.rows` — :data:`ROW_FIELDS`, :data:`NEW_ROW_COLUMNS` and
  :func:`new_row_values` (a ``NewRow``'s column values), and the twin classes that build
  frozen ``Row`` / ``StoredToolCall`` objects without their constructors;
* records (docs/plugin-hooks.md#records): :func:`record_page_cursor` and
  :func:`read_record_cursor`, the keyset cursor of ``list_records``;
* the event log (docs/plugin-hooks.md#the-event-log): :func:`check_chunk_writes`, the shape
  rules of ``write_event_chunks`` a backend checks before writing anything.
"""

from __future__ import annotations

from hermes_core.event_log.store import check_writes as check_chunk_writes
from hermes_core.record_store import page_cursor as record_page_cursor
from hermes_core.record_store import read_cursor as read_record_cursor
from hermes_core.storage_kit.json_columns import (
    EMPTY_META,
    ReadOnlyDict,
    decode_json,
    dump_json,
    dump_mapping,
    dump_meta,
    dump_parts,
    encode_string,
    load_mapping,
    load_meta,
    load_parts,
)
from hermes_core.storage_kit.reconnect import PoolCheck, retried
from hermes_core.storage_kit.rows import (
    NEW_ROW_COLUMNS,
    ROW_FIELDS,
    ROW_TWIN,
    TOOL_CALL_FIELDS,
    TOOL_CALL_TWIN,
    RowTwin,
    ToolCallTwin,
    new_row_values,
)
from hermes_core.storage_kit.sessions import (
    JSON_SESSION_COLUMNS,
    SESSION_COLUMNS,
    SessionListing,
    check_limit,
    decode_cursor,
    encode_cursor,
    session_from_values,
    session_page,
    session_params,
    session_value,
)

__all__ = [
    "EMPTY_META",
    "JSON_SESSION_COLUMNS",
    "NEW_ROW_COLUMNS",
    "ROW_FIELDS",
    "ROW_TWIN",
    "SESSION_COLUMNS",
    "TOOL_CALL_FIELDS",
    "TOOL_CALL_TWIN",
    "PoolCheck",
    "ReadOnlyDict",
    "RowTwin",
    "SessionListing",
    "ToolCallTwin",
    "check_chunk_writes",
    "check_limit",
    "decode_cursor",
    "decode_json",
    "dump_json",
    "dump_mapping",
    "dump_meta",
    "dump_parts",
    "encode_cursor",
    "encode_string",
    "load_mapping",
    "load_meta",
    "load_parts",
    "new_row_values",
    "read_record_cursor",
    "record_page_cursor",
    "retried",
    "session_from_values",
    "session_page",
    "session_params",
    "session_value",
]
