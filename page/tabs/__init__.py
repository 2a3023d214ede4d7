"""One page module per tab, named like its tab id in vizvit.vocab.TABS (the one tab list).
Each has `build(ctx, tab)`: its components, its events, one ctx.on_show."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from vizvit.vocab import TAB_IDS, TABS

# id -> page module, in the page's order
PAGES: dict[str, ModuleType] = {tab_id: import_module(f".{tab_id}", __name__) for tab_id in TAB_IDS}

__all__ = ["PAGES", "TABS"]
