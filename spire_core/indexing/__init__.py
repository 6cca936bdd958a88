"""Index units: sentence, block and passage seeds, each with its global context."""
