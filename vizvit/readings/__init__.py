"""Readings: what a setting of the page means for one photo and model, cached; each module owns its cache names."""
