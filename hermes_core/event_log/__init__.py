"""Every session's durable event log: the backend contract (``store``), the encoding
(``codec``), writing (``writer``), reading (``reader``), reopening after a crash
(``recovery``), retention and the kernel's owner ``kernel.events`` (``owner``).

docs/reference/core.md#the-event-log describes it; docs/plugin-hooks.md#the-event-log says what a
storage backend implements.
"""
