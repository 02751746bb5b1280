"""The store of Claude Code's sessions (``~/.claude``): read, and moved to samctl's attic."""
