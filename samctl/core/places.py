"""The folders around a store that samctl never writes an export or a cache into (the store, samctl's
attic and lock folder beside it, the app's own folder).  Light on imports: every command asks it."""

from __future__ import annotations

import os

from samctl.attic import ATTIC, attic_dir
from samctl.errors import SamctlError
from samctl.fs import safepaths
from samctl.lock import samctl_dir


def store_folder_holding(store, p) -> str | None:
    """Which of the store's folders (the store itself, samctl's attic and lock folder beside it,
    the app's folder around them) holds ``p``, directly or through a symlink, as words; else None."""
    app = _app_folder(store)
    real = os.path.realpath(p)  # (resolved once, not once per folder: every command asks, for each store)
    for folder, what in (
        (store.root_real, f"the store ({store.conv_dir})"),
        (os.path.realpath(_attic(store)), "samctl's attic"),
        (os.path.realpath(_lock(store)), "samctl's own folder"),
        (app, f"{store.app_name}'s folder ({app})"),
    ):
        if folder is not None and safepaths.within(folder, real):
            return what
    return None


def _app_folder(store) -> str | None:
    """The app's own folder around the store (``Store.app_folder``), or any store's parent that holds
    samctl's attic or lock folder (samctl made it the store's base).  None for a store given as a
    bare folder of conversations that samctl never wrote beside, whose parent is the user's."""
    base = os.path.dirname(store.root_real)
    if any(os.path.lexists(os.path.join(base, n)) for n in (ATTIC, ".samctl")):
        return base
    return store.app_folder()


def _attic(store):
    try:
        return attic_dir(store)
    except SamctlError:  # an attic place that cannot be used holds nothing (the writing commands say why)
        return store.base / ATTIC


def _lock(store):
    try:
        return samctl_dir(store)
    except SamctlError:  # (see _attic)
        return store.base / ".samctl"
