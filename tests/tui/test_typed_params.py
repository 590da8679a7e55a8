"""The typed methods parse their params with the models the export describes
(plugins/hermes_tui_gateway/wire_params.py): for every param of every typed method, a value of
the wrong JSON type gets -32602 naming that param, over real stdio."""

from __future__ import annotations

from typing import Any

from hermes_tui_gateway.wire_methods import METHOD_TYPES
from tests.tui.client import TuiProcess

#: a value of the wrong type for each declared type
WRONG = {str: 12345, int: "twelve", bool: "yes", "list": {"not": "a list"}}
#: params whose method answers a wrong type its own way (docs/reference/tui-gateway.md):
#: ``session.close`` never fails, ``session.steer`` says 4002 "text is required"
OWN_ANSWER = {
    ("session.close", "session_id"): None,
    ("session.steer", "text"): 4002,
    # a string or a number, as upstream's gateway reads it: no single wrong type to send
    ("billing.charge", "amount_usd"): None,
}


def _declared(annotation: Any) -> Any:
    args = getattr(annotation, "__args__", ())
    for candidate in (str, int, bool):
        if annotation is candidate or candidate in args:
            return candidate
    if getattr(annotation, "__origin__", None) is list:
        return "list"
    return None  # checked by the handler itself (the rewind fields): not the parser's


def test_every_typed_param_refuses_a_wrong_type(tui: TuiProcess) -> None:
    checked = 0
    for method, (model, _result) in sorted(METHOD_TYPES.items()):
        required = {
            name: "x"
            for name, field in model.model_fields.items()
            if field.is_required() or name in model.REQUIRED
        }
        for name, field in model.model_fields.items():
            kind = _declared(field.annotation)
            if kind is None:
                continue
            if (method, name) in OWN_ANSWER:
                code = OWN_ANSWER[(method, name)]
                if code is not None:
                    assert tui.error(method, {**required, name: WRONG[kind]}).code == code
                continue
            failure = tui.error(method, {**required, name: WRONG[kind]})
            assert failure.code == -32602, (method, name, failure.code, failure.message)
            assert failure.data["param"] == name, (method, name, failure.data)
            checked += 1
    assert checked >= 40
