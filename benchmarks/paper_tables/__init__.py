"""The papers' model × column tables (used by benchmarks/kr_tables.py)."""
