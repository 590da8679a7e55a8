"""Tool calls in SQLite's ``tool_calls`` column (JSON objects, call ids filled at insert).

Every other conversion between hermes_core records and column values is backend-neutral and
lives in ``hermes_core.storage_kit``.
"""

from __future__ import annotations

from hermes_core import StoredToolCall, storage_kit

decode_json = storage_kit.decode_json
dump_json = storage_kit.dump_json
encode_string = storage_kit.encode_string


def dump_tool_calls(calls: tuple[StoredToolCall, ...], row_id: int) -> str | None:
    """Encode an assistant row's tool calls, filling placeholder call ids.

    The JSON is put together from encoded strings: four times faster than building dicts for
    the encoder, and the same text.

    :param calls: the tool calls; a ``call_id`` of ``""`` becomes ``tc_<row id>_<index>``.
    :param row_id: the id the row is inserted with.
    :returns: the JSON text, or None when there are no calls.
    """
    if not calls:
        return None
    try:
        return (
            "["
            + ",".join(
                [
                    f'{{"call_id":{encode_string(call.call_id or f"tc_{row_id}_{index}")},'
                    f'"provider_call_id":{encode_string(call.provider_call_id)},'
                    f'"name":{encode_string(call.name)},"arguments":{encode_string(call.arguments)}}}'
                    for index, call in enumerate(calls)
                ]
            )
            + "]"
        )
    except TypeError:
        pass  # a field that is not a string: let the encoder handle (or refuse) it
    items = [
        {
            "call_id": call.call_id or f"tc_{row_id}_{index}",
            "provider_call_id": call.provider_call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        for index, call in enumerate(calls)
    ]
    return dump_json(items)


def load_tool_calls(text: str | None) -> tuple[StoredToolCall, ...]:
    """Decode the ``tool_calls`` column.

    :param text: the column value.
    :returns: the tool calls, empty when NULL.
    """
    if not text:
        return ()
    items = decode_json(text)
    twin = storage_kit.TOOL_CALL_TWIN
    if twin is None:
        return tuple(
            StoredToolCall(
                call_id=item["call_id"],
                provider_call_id=item["provider_call_id"],
                name=item["name"],
                arguments=item["arguments"],
            )
            for item in items
        )
    calls: list[StoredToolCall] = []
    for item in items:
        call = object.__new__(twin)
        call.call_id = item["call_id"]
        call.provider_call_id = item["provider_call_id"]
        call.name = item["name"]
        call.arguments = item["arguments"]
        call.__class__ = StoredToolCall  # type: ignore[assignment]
        calls.append(call)  # type: ignore[arg-type]
    return tuple(calls)
