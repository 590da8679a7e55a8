"""PostgreSQL storage backend (``storage.backend = "postgres"``)."""
