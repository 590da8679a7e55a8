"""The ``/model`` slash command: show the current model and its choices, or switch it."""
