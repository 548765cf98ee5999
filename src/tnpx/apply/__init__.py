"""Using a trained model on a user's data: :func:`tnpx.predict` (:mod:`tnpx.apply.predict`,
its steps in :mod:`~tnpx.apply.predict_steps` and checks in :mod:`~tnpx.apply.predict_checks`,
its unit maps chosen in :mod:`~tnpx.apply.unit_choice`, long target files a chunk at a time in
:mod:`~tnpx.apply.table_chunks`), joint samples (:func:`tnpx.sample`,
:mod:`tnpx.apply.sample`), observations over time (:class:`tnpx.ContextStream`,
:mod:`tnpx.apply.stream`) and the scikit-learn estimator (:class:`tnpx.NPRegressor`,
:mod:`tnpx.apply.estimator`). ``import tnpx`` gives the public names; modules are imported by
name: this package imports nothing itself.
"""
