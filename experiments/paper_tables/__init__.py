"""The papers' model × column tables (used by experiments/kr_tables.py)."""
