"""A Hermes plugin template: an ``add_note`` tool and a ``/notes`` command."""
