"""The map methods, one module each (as pytorch-grad-cam keeps one file per CAM): a module holds its
method's maths, its call into the engine (``engine.backward`` with the hooks it asks for) and its
``Method`` record (vizvit.methods.base), the one place its name is written. The registry that lists
them in order, and that every consumer reads, is vizvit.readings.methods.

Adding a method: one module here with its record, its test (tests/methods/test_<module>.py), its
entry in docs/methods.md, and its record named in readings.methods.METHODS.
"""
