"""The store of Codex CLI's sessions (``~/.codex``): read, and moved to samctl's attic."""
