"""Helpers shared by the tests: small models and tasks, tiny configs, fake files and the
reference operations of the fidelity tests. Tests import them as ``tests.helpers.<module>``."""
