"""Using a trained model on a user's data: :func:`tnpx.predict` (:mod:`tnpx.apply.predict`,
its steps in :mod:`~tnpx.apply.predict_steps` and checks in :mod:`~tnpx.apply.predict_checks`,
a Gaussian model's numbers in :mod:`~tnpx.apply.predict_values`, every other likelihood
family's columns in :mod:`~tnpx.apply.family_columns`,
its unit maps chosen in :mod:`~tnpx.apply.unit_choice`, long target files a chunk at a time in
:mod:`~tnpx.apply.table_chunks`), joint samples (:func:`tnpx.sample`,
:mod:`tnpx.apply.sample`), observations over time (:class:`tnpx.ContextStream`,
:mod:`tnpx.apply.stream`) and the scikit-learn estimator (:class:`tnpx.NPRegressor`,
:mod:`tnpx.apply.estimator`). ``import tnpx`` gives the main names; this package's ``__all__``
adds what a caller building on them uses (:func:`resolve_model`, :func:`training_domain`, a
grid's context rows :func:`grid_context_rows`), each imported from its module on first use
(``predict`` and ``sample`` are modules here: call them as ``tnpx.predict``, ``tnpx.sample``).
"""

from __future__ import annotations

from ..extras import names_on_first_use

# public name -> the module of this package that defines it
_HOMES = {
    "CompiledModel": "compiled",
    "ContextStream": "stream",
    "DataError": "predict",
    "NPRegressor": "estimator",
    "compile_for_inference": "compiled",
    "grid_context_rows": "grid_context",
    "resolve_model": "predict",
    "training_domain": "predict",
}

__all__ = sorted(_HOMES)
__getattr__ = names_on_first_use(__name__, _HOMES)
