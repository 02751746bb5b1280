"""``samctl search`` and ``samctl index``: read-only search over every store's messages and memories.

- ``query`` (the query language), ``hits`` (a hit, its snippet, the order of hits), ``text`` (the tokenizer),
  ``calls`` (a tool call as one line);
- ``retrieve`` (dispatch: which way a query is answered), ``ranked`` (the default: BM25 over the index),
  ``rank`` (the BM25 and conversation-evidence arithmetic), ``corpus`` (several indexes as one corpus),
  ``grouped`` (hits as conversations), ``scoring`` (SAM's own memory retrieval rules), ``like`` (``--like``);
- ``index/`` (the disposable on-disk index), ``heap`` (glibc's malloc kept from shrinking between arrays).

Nothing here writes into a store (``--touch`` goes through the store, called by the CLI).  numpy is imported
only inside functions.
"""
