"""The lab's performance measurements: time and memory of the library's models and commands,
and KR-5's scaling tables. Not part of the installed package: each probe runs from the
repository root as ``python -m benchmarks.NAME`` and reaches tnpx only through its public API
(``tests/boundary/test_lab_boundary.py``); ``bench`` measures one forward in a fresh process."""
