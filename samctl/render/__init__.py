"""Writers of conversations: plain text, Markdown and HTML (no click, no terminal codes)."""
