"""samctl: a toolkit for the conversation archives of SAM and mermaid-cli.

Layers (data flows one way): cli -> core -> formats -> fsafe.  See README.md.
"""

__version__ = "0.1.0"
