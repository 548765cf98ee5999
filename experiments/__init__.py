"""The lab's experiments: paper reproduction, the BO benchmark, the zoo release pipeline and the
long training runs. Not part of the installed package: each module runs from the repository
root as ``python -m experiments.NAME`` (``README.md`` here lists them and states the long-runs
policy), and reaches tnpx only through its public API (``tests/test_lab_boundary.py``)."""
