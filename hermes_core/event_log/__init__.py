"""Every session's durable event log: the backend contract (``store``), the encoding
(``codec``), writing (``writer``, with ``chunk_writes``, ``waiters`` and the kernel's task
``writer_task``), reading (``reader``), reopening after a crash (``recovery``), retention and
the kernel's owner ``kernel.events`` (``owner``).

docs/reference/core.md#the-event-log describes it; docs/plugin-hooks.md#the-event-log says what a
storage backend implements.
"""
