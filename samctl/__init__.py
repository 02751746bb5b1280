"""samctl: a toolkit for the conversation archives of SAM and mermaid-cli.

Layers (data flows one way): cli -> core -> {search, attic, render, report} -> stores -> bottom modules
(model, fs/, lock, errors, ...).  See docs/ARCHITECTURE.md.
"""

__version__ = "0.1.0"
