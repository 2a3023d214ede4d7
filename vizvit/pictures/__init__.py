"""Pictures: arrays -> uint8 RGB images (render.py) and plotly charts (figures.py).
Nothing here reads a model or a cache."""
