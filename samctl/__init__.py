"""samctl: a command line over AI assistants' conversation archives (SAM, mermaid-cli, Claude Code, Codex CLI,
llm, ChatGPT exports): list, read, search, check, export, and move to an attic and back.

Layers (data flows one way): cli -> core -> {search, attic, render, report} -> stores -> bottom modules
(model, fs/, lock, errors, ...).  See docs/ARCHITECTURE.md.
"""

__version__ = "0.1.0"
