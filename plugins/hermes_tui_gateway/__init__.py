"""Transport plugin (under construction; see its issue)."""
