"""Training a model: the loop (:mod:`tnpx.training.loop`, ``tnpx train``) and its parts, each
its own module: a run set up (:mod:`~tnpx.training.session`, from the helpers of
:mod:`~tnpx.training.setup`: device, sampler, checks, fine-tuning's weights, stop signals),
one training step (:mod:`~tnpx.training.step`) in its precision
(:mod:`~tnpx.training.precision`) and, optionally, compiled (:mod:`~tnpx.training.compiled`),
batches (:mod:`~tnpx.training.batches`),
optimisers and schedules (:mod:`~tnpx.training.optim`), the non-finite guard
(:mod:`~tnpx.training.guard`), validation (:mod:`~tnpx.training.validation`), the best weights
and patience (:mod:`~tnpx.training.best`), the weight average (:mod:`~tnpx.training.ema`), the
metrics log and progress bar (:mod:`~tnpx.training.progress`), why a run stops
(:mod:`~tnpx.training.stopping`), the run's state on disk (:mod:`~tnpx.training.state`), and
where long runs stand (:mod:`~tnpx.training.runs`, ``tnpx runs``). The public names
(``__all__``: :func:`train`, :func:`fit`, :func:`train_or_load`, a run folder's
:func:`last_checkpoint` and :func:`run_status`, and the parts a benchmark times one by one) are
each imported from its module on first use, so importing this package imports nothing else.
"""

from __future__ import annotations

from ..extras import names_on_first_use

# public name -> the module of this package that defines it
_HOMES = {
    "BatchStream": "batches",
    "CompiledObjective": "compiled",
    "RunStatus": "runs",
    "StepPrecision": "precision",
    "TrainingDiverged": "guard",
    "all_finite": "guard",
    "build_optimizer": "optim",
    "build_schedule": "optim",
    "build_train_sampler": "setup",
    "clip_gradients": "optim",
    "experiment_of": "state",
    "find_runs": "runs",
    "fit": "loop",
    "last_checkpoint": "state",
    "open_session": "session",
    "parameter_groups": "optim",
    "read_metrics": "runs",
    "resolve_device": "setup",
    "run_files": "state",
    "run_status": "runs",
    "status_table": "runs",
    "train": "entry",
    "train_or_load": "loop",
    "train_step": "step",
    "validation_ll": "validation",
}

__all__ = sorted(_HOMES)
__getattr__ = names_on_first_use(__name__, _HOMES)
