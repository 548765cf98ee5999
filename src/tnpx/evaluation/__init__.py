"""Scoring a trained model: on the protocol's fixed test set (:mod:`tnpx.evaluation.protocol`,
``tnpx eval``), on a user's held-out tasks beside per-task baselines
(:mod:`tnpx.evaluation.user_tasks`) with a standard error over the split's clusters
(:mod:`tnpx.evaluation.clusters`) and coverage flagged when far from nominal
(:mod:`tnpx.evaluation.coverage_flags`), and how far beyond its context it stays calibrated
(:mod:`tnpx.evaluation.extrapolation`). The public names (``__all__``: ``from tnpx.evaluation
import evaluate, Metrics``) are each imported from its module on first use, so importing this
package imports nothing else.
"""

from __future__ import annotations

from ..extras import names_on_first_use

# public name -> the module of this package that defines it
_HOMES = {
    "BASELINES": "user_tasks",
    "ClusterRule": "clusters",
    "CoverageBin": "coverage_flags",
    "DEFAULT_EDGES": "extrapolation",
    "DistanceBin": "extrapolation",
    "Metrics": "protocol",
    "PRIOR_2D": "extrapolation",
    "SafeRange": "extrapolation",
    "TaskMetrics": "user_tasks",
    "Z95": "protocol",
    "build_test_sampler": "protocol",
    "cached_evaluate": "protocol",
    "cluster_rule": "clusters",
    "clustered_se": "clusters",
    "coverage_by_context": "coverage_flags",
    "coverage_flags": "coverage_flags",
    "distance_profile": "extrapolation",
    "evaluate": "protocol",
    "evaluate_tasks": "user_tasks",
    "format_coverage_bins": "coverage_flags",
    "format_table": "protocol",
    "format_task_table": "user_tasks",
    "likelihood_of": "user_tasks",
    "mean_se": "protocol",
    "per_task": "user_tasks",
    "prior_profile_sampler": "extrapolation",
    "profile_targets": "extrapolation",
    "safe_range": "extrapolation",
    "se_assumptions": "user_tasks",
    "summarise": "user_tasks",
}

__all__ = sorted(_HOMES)
__getattr__ = names_on_first_use(__name__, _HOMES)
