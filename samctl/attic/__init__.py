"""The attic: archive entries, their manifests, the journal of moves and crash repair, and
the commands that move conversations in and out of it (rm, archive, restore, compact)."""

ATTIC = "samctl-attic"  # the attic's folder, in the store's base folder (here: light for every command to name)
