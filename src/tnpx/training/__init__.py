"""Training a model: the loop (:mod:`tnpx.training.loop`, ``tnpx train``) and its parts, each
its own module: setting a run up (:mod:`~tnpx.training.setup`: device, sampler, checks,
fine-tuning's weights, stop signals), batches (:mod:`~tnpx.training.batches`), optimisers and
schedules (:mod:`~tnpx.training.optim`), the non-finite guard (:mod:`~tnpx.training.guard`),
the best weights and patience (:mod:`~tnpx.training.best`), the run's state on disk
(:mod:`~tnpx.training.state`), and where long runs stand (:mod:`~tnpx.training.runs`,
``tnpx runs``). Modules are imported by name: this package imports nothing itself.
"""
