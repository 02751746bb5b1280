"""Every byte samctl reads or writes goes through this package, one module per concern.

- ``safepaths``: a name joined onto a root is one safe component; inside a root; a path as printed.
- ``filemodes``: what kind of file a path is; samctl's modes (files 0600, folders 0700).
- ``reading``: capped reads that never follow a symlink or block on a FIFO; hashes of files.
- ``writing``: atomic replacement through a temp sibling; temps for multi-step moves; new names
  that never replace.
- ``removing``: files and folder trees, never through a symlink.
- ``syncing``: fsync of files and folders, and batches that defer them to ``syncfs`` barriers.
- ``faults``: the fault-injection point every write step passes through (for the tests).
- ``userdirs``: the user's cache and data folders, and whether they are samctl's own.

samctl's locks (``flock``) are in ``samctl.lock``.  Documented exceptions (raw ``os`` calls elsewhere):
``cli/__init__._to_devnull`` opens /dev/null; SQLite files are opened by ``stores/sqlite.py`` (and new
ones created by ``stores/sam`` ``create_*_db``).
"""
