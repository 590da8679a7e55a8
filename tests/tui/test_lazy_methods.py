"""Methods whose module loads on first call (plugins/hermes_tui_gateway/method_index.py).

The index is checked against what the modules register, so a method added to a module without
its index entry (which would answer -32601 until another method of that module ran) fails here.
Through a real gateway: a lazily loaded method of each kind answers on its first call, and its
module was not imported before.
"""

from __future__ import annotations

from types import SimpleNamespace

from hermes_tui_gateway import method_index
from tests.tui.client import TuiProcess


def _registered(name: str) -> set[str]:
    tables = SimpleNamespace(fast={}, ordered={}, slow={})
    method_index.load(name).register(tables)
    return {*tables.fast, *tables.ordered, *tables.slow}


def test_the_index_names_every_method_of_the_modules_loaded_on_demand() -> None:
    lazy = [name for name in method_index.ALL if name not in method_index.EAGER]
    expected = {method: name for name in lazy for method in _registered(name)}
    assert method_index.LAZY_METHODS == expected
    eager = set().union(*(_registered(name) for name in method_index.EAGER))
    assert not eager & set(expected), "a method registered at start-up is also loaded on demand"


def test_a_lazy_method_answers_its_first_call(tui: TuiProcess) -> None:
    sid = tui.create()
    # fast: config.get (methods_config); slow: session.save (methods_history)
    assert tui.call("config.get", session_id=sid, key="model")["value"] == "mock:echo"
    assert str(tui.call("session.save", session_id=sid)["file"]).endswith(".json")
    assert tui.error("no.such.method").code == -32601
    assert tui.call("voice.toggle", action="status")["enabled"] is False  # an "off" answer
