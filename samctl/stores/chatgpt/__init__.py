"""The store of ChatGPT's data export (``conversations.json``): read-only."""
