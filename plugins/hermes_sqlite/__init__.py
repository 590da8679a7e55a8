"""Embedded SQLite storage, the default storage backend (``storage.backend = "sqlite"``)."""
