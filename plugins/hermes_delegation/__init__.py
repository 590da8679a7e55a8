"""The ``delegation`` plugin: the ``delegate_task`` tool that runs child agents (docs/delegation.md)."""
