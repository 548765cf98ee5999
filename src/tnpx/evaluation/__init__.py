"""Scoring a trained model: on the protocol's fixed test set (:mod:`tnpx.evaluation.protocol`,
``tnpx eval``), on a user's held-out tasks beside per-task baselines
(:mod:`tnpx.evaluation.user_tasks`), and how far beyond its context it stays calibrated
(:mod:`tnpx.evaluation.extrapolation`). Modules are imported by name: this package imports
nothing itself.
"""
