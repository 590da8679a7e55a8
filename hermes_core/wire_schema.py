"""Turn a transport's wire types (pydantic models, ``TypedDict`` s) into JSON Schema 2020-12.

Used only by the ``hermes_schemas`` producers, which ``hermes schema export`` calls: pydantic's
JSON Schema generator is imported here, inside the function, never at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

#: The dialect every exported document declares.
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def wire_schemas(
    types: Mapping[str, Any], ref_prefix: str, mode: Literal["validation", "serialization"] = "serialization"
) -> dict[str, Any]:
    """Return one JSON Schema per named type, nested types hoisted beside them.

    :param types: schema name → a pydantic model class or any type pydantic can validate
        (``TypedDict``, ``Literal``, a union).
    :param ref_prefix: where the caller puts the result, e.g. ``#/components/schemas/``;
        every ``$ref`` points there.
    :param mode: ``serialization`` for what the server sends (a field with a default is always
        sent), ``validation`` for what it reads (such a field may be left out).
    :returns: schema name → JSON Schema, sorted by name (a nested type appears once, under its
        class name).
    :raises ValueError: two different types would share one name.
    """
    from pydantic import TypeAdapter

    found: dict[str, Any] = {}

    def put(name: str, schema: Any) -> None:
        if name in found and found[name] != schema:
            raise ValueError(f"two wire types are both named {name!r}")
        found[name] = schema

    for name, type_ in types.items():
        schema = TypeAdapter(type_).json_schema(ref_template=ref_prefix + "{model}", mode=mode)
        for nested, sub in schema.pop("$defs", {}).items():
            put(nested, sub)
        put(name, schema)
    return dict(sorted(found.items()))
