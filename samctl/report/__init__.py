"""Reports over a store's listing and files: ``stats`` (sizes, counts, when it was used) and ``usage``
(tokens and estimated cost).

A layer beside search, attic and render: it reads through the stores and the bottom modules, imports none
of its siblings, and never prints or imports click (the commands in ``cli/`` format what it returns).
"""
