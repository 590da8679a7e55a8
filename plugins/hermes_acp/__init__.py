"""The ACP transport: ``hermes acp`` speaks the Agent Client Protocol on stdio."""

from __future__ import annotations
