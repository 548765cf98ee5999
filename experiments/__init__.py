"""The lab's experiments, a folder per study: the papers' tables (``paper_tables``), the BO
benchmark (``bo``), the pretrained zoo (``zoo``), its Bayes reference (``bayes``), the zoo
zero-shot (``zero_shot``) and the long training runs (``long_runs``). Not part of the installed
package: each module runs from the repository root as ``python -m experiments.STUDY.NAME``
(``README.md`` here lists them and states the long-runs policy), and reaches tnpx only through
its public API (``tests/boundary/test_lab_boundary.py``)."""
