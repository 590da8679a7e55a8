"""Entry point of this transport; it declares no transport until the plugin is built."""

from __future__ import annotations
