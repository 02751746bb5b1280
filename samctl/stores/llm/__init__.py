"""The store of Simon Willison's ``llm`` logs database (``logs.db``): read-only."""
