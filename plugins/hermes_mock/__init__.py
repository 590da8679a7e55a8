"""Deterministic offline model provider (``mock:echo``, ``mock:script``, ``mock:alt``, ``mock:history``)."""
