"""The ``hermes`` command line: settings files, plugin selection and the click app (see main.py)."""
