"""Serving many callers: costly jobs shared fairly (jobs.py), rate limits per address, the thread
policy, and live camera sessions."""
