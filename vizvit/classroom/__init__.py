"""The classroom: the lesson's steps (lesson.py, lesson.toml) and claims, live rooms over a
RoomStore (SQLite by default, Redis across replicas), and the lecturer's numbers."""
