"""``samctl browse``: a terminal browser over every archive, built on Textual.

A layer at the level of ``cli``: it may import ``core``, ``search``, ``attic``, ``render``, ``report`` and the
bottom modules, and nothing imports it except ``cli/browse.py`` (which imports it only after checking
that Textual, the optional extra ``samctl[tui]``, is installed).  ``rows.py`` and ``actions.py`` hold
everything that does not need Textual (what the screens show, what the keys do); ``app.py`` and
``screens.py`` are the Textual side.
"""
