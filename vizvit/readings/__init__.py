"""Readings: what a setting of the page means, computed once per photo (or model) and cached.

Each module owns the cache names of what it computes (the `name` a ``Photo.derived`` key ends
in); vizvit.session only keys them generically. Views present readings; api.py and export.py read
them. Nothing here draws a picture or runs a model except through vizvit.model.engine.
"""
