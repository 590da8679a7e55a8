"""Parse the two kinds of reference strings Hermes accepts: ``provider:model`` and ``module:Class``.

Both are split at the first ``:``, but they follow different rules:

* a **model reference** may contain colons in the model id itself (``ollama:qwen3:8b``,
  ``qwen3:8b``), so the text before the first ``:`` is a provider only if the provider directory
  knows that name — :meth:`ModelRef.parse` is the one place this rule lives;
* an **import reference** ``module:attr.path`` always has both halves — :func:`load_ref`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model reference split into its optional provider and the model id.

    ``provider`` is None when the text named no known provider; ``str(ref)`` gives the text back
    (``provider:model`` or the bare model).
    """

    provider: str | None
    model: str

    @classmethod
    def parse(cls, text: str, known_providers: Container[str] | Callable[[str], bool]) -> ModelRef:
        """Split ``text``; the prefix before the first ``:`` is a provider only if it is known.

        :param text: what the user, a host or a setting gave (not stripped here).
        :param known_providers: the provider names (any container), or a predicate such as
            ``kernel.hub.has``.
        :returns: ``ModelRef(provider, model)``; ``ModelRef(None, text)`` when the prefix is not a
            known provider or there is no ``:``.
        """
        prefix, sep, rest = text.partition(":")
        if sep:
            known = known_providers(prefix) if callable(known_providers) else prefix in known_providers
            if known:
                return cls(prefix, rest)
        return cls(None, text)

    @classmethod
    def split(cls, ref: str | None) -> ModelRef:
        """Split a *resolved* reference, which always starts with its provider (``openai:gpt-4o``).

        Resolved references are what the core stores and reports (a session's model, the default
        model); their prefix is a provider by construction. Empty or None gives ``ModelRef(None, "")``.
        """
        provider, sep, model = (ref or "").partition(":")
        if not sep:
            return cls(None, provider)
        return cls(provider or None, model)

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}" if self.provider else self.model


def load_ref(ref: Any) -> Any:
    """Return ``ref`` itself, or the object an import string ``"module:attr.path"`` names.

    Settings models, factories and hooks may be given as the object or as such a string.

    :param ref: a class (or any object), an import string, or None.
    :returns: the resolved object (anything that is not a string is returned unchanged).
    :raises ImportError: the string is not ``module:attr``, the module cannot be imported or it
        has no such attribute.
    """
    if not isinstance(ref, str):
        return ref
    module_name, sep, attr_path = ref.partition(":")
    module_name, attr_path = module_name.strip(), attr_path.strip()
    if not sep or not module_name or not attr_path:
        raise ImportError(f"expected 'module:Class', got {ref!r}")
    obj: Any = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        try:
            obj = getattr(obj, attr)
        except AttributeError as exc:
            raise ImportError(f"{module_name} has no attribute {attr_path!r}") from exc
    return obj
