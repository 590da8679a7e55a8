"""The foundation slash commands: /help, /compress, /title, /branch (/fork), /usage, /status, /stop."""
