"""The model: load_model (the only one), one Family entry per family (models.py), and the engine,
the only place the model runs (engine.py; hooks.py: one run's hooks under one lock)."""
