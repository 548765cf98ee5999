"""Training a model: the loop (:mod:`tnpx.training.loop`, ``tnpx train``) and its parts, each
its own module: a run set up (:mod:`~tnpx.training.session`, from the helpers of
:mod:`~tnpx.training.setup`: device, sampler, checks, fine-tuning's weights, stop signals),
one training step (:mod:`~tnpx.training.step`), batches (:mod:`~tnpx.training.batches`),
optimisers and schedules (:mod:`~tnpx.training.optim`), the non-finite guard
(:mod:`~tnpx.training.guard`), validation (:mod:`~tnpx.training.validation`), the best weights
and patience (:mod:`~tnpx.training.best`), the weight average (:mod:`~tnpx.training.ema`), the
metrics log and progress bar (:mod:`~tnpx.training.progress`), why a run stops
(:mod:`~tnpx.training.stopping`), the run's state on disk (:mod:`~tnpx.training.state`), and
where long runs stand (:mod:`~tnpx.training.runs`, ``tnpx runs``). Modules are imported by
name: this package imports nothing itself.
"""
