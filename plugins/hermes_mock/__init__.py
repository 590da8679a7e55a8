"""Deterministic offline model provider (``mock:echo``, ``mock:script``, ``mock:alt``, ``mock:history``,
``mock:scenario:PATH``, ``mock:replay:DIR``)."""
