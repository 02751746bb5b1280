"""The store of SAM's conversations and memory databases: read and written."""
