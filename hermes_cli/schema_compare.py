"""Compare two JSON Schemas of one wire message by direction: what a client sends or what it receives.

``input`` is what clients send and the server reads (params, request bodies); ``output`` is what
the server sends (results, events, response bodies). The rules (CONTRIBUTING.md, "The schema
gate"): removing an output field, an enum value or a union variant, changing a type, making an
output field optional or adding a required input is breaking; adding an optional output (or any
output field), an enum value, a variant or an optional input is not. Anything marked
``x-experimental: true`` is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["input", "output"]


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between two exports.

    :param breaking: whether existing clients can break.
    :param where: the protocol and the message (``tui: event message.complete``).
    :param what: the change, one line.
    """

    breaking: bool
    where: str
    what: str

    def line(self) -> str:
        """Return the change as ``hermes schema diff`` prints it."""
        return f"{'BREAKING' if self.breaking else 'ok      '} {self.where}: {self.what}"


def experimental(node: Any) -> bool:
    """Whether a schema, method, event or operation is marked ``x-experimental``."""
    return isinstance(node, dict) and node.get("x-experimental") is True


class SchemaComparer:
    """Walks two schemas side by side, following local ``$ref`` s in each document.

    :param old_doc: the old document (``$ref`` s resolve in it).
    :param new_doc: the new document.
    :param protocol: the protocol name every change is reported under.
    """

    def __init__(self, old_doc: Any, new_doc: Any, protocol: str) -> None:
        self.old_doc = old_doc
        self.new_doc = new_doc
        self.protocol = protocol
        self.changes: list[Change] = []
        self._seen: set[tuple[str, str, str]] = set()

    def note(self, breaking: bool, where: str, what: str) -> None:
        """Record one change."""
        self.changes.append(Change(breaking, f"{self.protocol}: {where}", what))

    # -- resolving ---------------------------------------------------------------------------
    @staticmethod
    def _pointer(doc: Any, ref: str) -> Any:
        node = doc
        for part in ref.removeprefix("#/").split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def _resolve(self, doc: Any, schema: Any) -> tuple[Any, str | None]:
        """Follow ``$ref`` and single-entry ``allOf`` wrappers; return the target and the last ref."""
        ref_seen: str | None = None
        for _ in range(64):
            if not isinstance(schema, dict):
                return schema, ref_seen
            ref = schema.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/"):
                ref_seen = ref
                schema = self._pointer(doc, ref)
                continue
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and not schema.get("properties"):
                schema = all_of[0]
                continue
            return schema, ref_seen
        return schema, ref_seen

    # -- comparing ---------------------------------------------------------------------------
    def compare(self, old: Any, new: Any, direction: Direction, where: str) -> None:
        """Compare one message's schemas.

        :param old: the old schema (may be a ``$ref``).
        :param new: the new schema.
        :param direction: ``input`` or ``output``.
        :param where: the message and the path inside it, for the report.
        """
        old, old_ref = self._resolve(self.old_doc, old)
        new, new_ref = self._resolve(self.new_doc, new)
        if old_ref is not None and new_ref is not None:
            key = (old_ref, new_ref, direction)
            if key in self._seen:
                return
            self._seen.add(key)
        if not isinstance(old, dict) or not isinstance(new, dict) or experimental(old) or experimental(new):
            return
        if not _constrained(old):
            return  # anything was allowed before: nothing a client relied on can go
        if not _constrained(new):
            if direction == "input":
                return  # the server now accepts anything: looser input is fine
            self.note(True, where, "no longer described (any value may be sent)")
            return
        self._types(old, new, direction, where)
        self._enum(old, new, where)
        self._variants(old, new, direction, where)
        self._properties(old, new, direction, where)
        for part in ("items", "additionalProperties"):
            if isinstance(old.get(part), dict) and isinstance(new.get(part), dict):
                inner = "item" if part == "items" else "*"
                self.compare(old[part], new[part], direction, f"{where}[{inner}]")

    def _types(self, old: dict[str, Any], new: dict[str, Any], direction: Direction, where: str) -> None:
        old_types, new_types = _types(old), _types(new)
        if old_types is None or new_types is None:
            return
        for gone in sorted(old_types - new_types):
            if gone == "integer" and "number" in new_types:
                continue
            self.note(
                True, where, f"type {gone!r} no longer {'accepted' if direction == 'input' else 'sent'}"
            )
        for added in sorted(new_types - old_types):
            if added == "number" and "integer" in old_types:
                if direction == "output":
                    self.note(True, where, "may now be a non-integer number")
                continue
            self.note(direction == "output", where, f"type {added!r} added")

    def _enum(self, old: dict[str, Any], new: dict[str, Any], where: str) -> None:
        old_values, new_values = _enum(old), _enum(new)
        if old_values is None:
            return
        if new_values is None:
            if _types(new) is not None or _variants(new):
                self.note(False, where, "enum lifted")
            return
        for value in old_values:
            if value not in new_values:
                self.note(True, where, f"enum value {value!r} removed")
        for value in new_values:
            if value not in old_values:
                self.note(False, where, f"enum value {value!r} added")

    def _variants(self, old: dict[str, Any], new: dict[str, Any], direction: Direction, where: str) -> None:
        old_variants, new_variants = _variants(old), _variants(new)
        if not old_variants:
            return
        old_keyed = {self._variant_key(self.old_doc, v, i): v for i, v in enumerate(old_variants)}
        new_keyed = {self._variant_key(self.new_doc, v, i): v for i, v in enumerate(new_variants)}
        for key, variant in old_keyed.items():
            if experimental(self._resolve(self.old_doc, variant)[0]):
                continue
            if key not in new_keyed:
                if not new_variants and _types(new) is not None:
                    continue  # a union became one plain type; _types reports what was lost
                widened = self._widened(variant, new_variants)
                if widened is not None:
                    # A constant became its whole type (``false`` -> boolean): a client may send
                    # more than before; a server may send values a client never saw.
                    self.note(direction == "output", where, f"union variant {key} widened to {widened}")
                    continue
                self.note(True, where, f"union variant {key} removed")
            else:
                self.compare(variant, new_keyed[key], direction, f"{where}<{key}>")
        for key in new_keyed:
            if key not in old_keyed:
                self.note(False, where, f"union variant {key} added")

    def _widened(self, variant: Any, new_variants: list[Any]) -> str | None:
        """The type of a new variant that holds the removed constant ``variant``, or None."""
        target, _ = self._resolve(self.old_doc, variant)
        if not isinstance(target, dict) or "const" not in target:
            return None
        value = target["const"]
        wanted = {bool: "boolean", str: "string", int: "integer", float: "number", type(None): "null"}
        kind = wanted.get(type(value))
        for candidate in new_variants:
            resolved, _ = self._resolve(self.new_doc, candidate)
            if not isinstance(resolved, dict) or "const" in resolved or _enum(resolved) is not None:
                continue
            types = _types(resolved) or set()
            if kind in types or (kind == "integer" and "number" in types):
                return kind
        return None

    def _variant_key(self, doc: Any, variant: Any, index: int) -> str:
        target, ref = self._resolve(doc, variant)
        if ref is not None:
            return ref.rsplit("/", 1)[-1]
        if not isinstance(target, dict):
            return f"#{index}"
        for prop, sub in sorted((target.get("properties") or {}).items()):
            if isinstance(sub, dict) and "const" in sub:
                return f"{prop}={sub['const']!r}"
        title = target.get("title")
        if isinstance(title, str):
            return title
        if "const" in target:
            return repr(target["const"])
        types = _types(target)
        return "|".join(sorted(types)) if types else f"#{index}"

    def _properties(self, old: dict[str, Any], new: dict[str, Any], direction: Direction, where: str) -> None:
        old_props = old.get("properties")
        if not isinstance(old_props, dict):
            return
        found = new.get("properties")
        new_props: dict[str, Any] = found if isinstance(found, dict) else {}
        old_req = set(old.get("required") or ())
        new_req = set(new.get("required") or ())
        closed = new.get("additionalProperties") is False
        for name, schema in old_props.items():
            if experimental(schema):
                continue
            path = f"{where}.{name}"
            if name not in new_props:
                if direction == "output":
                    self.note(True, where, f"field {name!r} removed")
                else:
                    self.note(closed, where, f"input field {name!r} removed")
                continue
            if direction == "output" and name in old_req and name not in new_req:
                self.note(True, where, f"field {name!r} is no longer always sent")
            if direction == "input" and name not in old_req and name in new_req:
                self.note(True, where, f"input field {name!r} became required")
            self.compare(schema, new_props[name], direction, path)
        for name, schema in new_props.items():
            if name in old_props or experimental(schema):
                continue
            required = name in new_req
            if direction == "input":
                self.note(
                    required, where, f"{'required' if required else 'optional'} input field {name!r} added"
                )
            else:
                self.note(False, where, f"{'field' if required else 'optional field'} {name!r} added")


def _types(schema: dict[str, Any]) -> set[str] | None:
    value = schema.get("type")
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {t for t in value if isinstance(t, str)}
    return None


def _enum(schema: dict[str, Any]) -> list[Any] | None:
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    return None


def _variants(schema: dict[str, Any]) -> list[Any]:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return list(schema[key])
    return []


def _constrained(schema: dict[str, Any]) -> bool:
    """Whether a schema says anything a client could rely on (``{}`` and untyped objects do not)."""
    if schema.get("x-typed") is False:
        return False
    keys = set(schema) - {"title", "description", "default", "examples", "x-typed", "$comment"}
    if keys <= {"type", "additionalProperties"} and schema.get("type") == "object":
        return bool(schema.get("additionalProperties") is False)
    return bool(keys)
