"""Settings of the ``openai`` provider, its presets and custom providers (``providers.<name>``).

The kernel validates ``providers.<name>`` from ``config.toml`` together with the credential
variables named by the provider's ``env_vars`` into :class:`OpenAISettings`.
"""

from __future__ import annotations

from hermes_core import provider_kit

# A table in ``models``; a model of an OpenAI-compatible server takes no images unless told.
ModelEntry = provider_kit.ModelEntry


class OpenAISettings(provider_kit.HttpSettings):
    """One OpenAI-compatible endpoint; the fields are those of ``provider_kit.HttpSettings``.

    ``api_key`` is sent as a bearer token and omitted when unset (local servers); ``base_url`` is
    the API root ending in ``/v1`` (default: the preset's, else OpenAI's); ``extra_headers`` suit
    e.g. OpenRouter's ``HTTP-Referer``.
    """
