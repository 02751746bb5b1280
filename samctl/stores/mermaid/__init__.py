"""The store of mermaid-cli's conversations (``.mermaid/conversations``): read and written."""
