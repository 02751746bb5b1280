"""The attic: archive entries, their manifests, the journal of moves and crash repair, and
the commands that move conversations in and out of it (rm, archive, restore, compact)."""

ATTIC = "samctl-attic"  # the attic's folder, in the store's base folder (here: light for every command to name)


def attic_dir(store):
    """The store's attic: ``samctl-attic`` in its base folder, or where the store says
    (``Store.attic_folder``: samctl's data folder, for an app whose folders samctl never writes in)."""
    return store.attic_folder() or store.base / ATTIC
