"""Per-model prices for the model catalog, from the maintained ``genai-prices`` table."""
