"""Tests of the ``hermes`` command line; most run the real console script as a subprocess."""
