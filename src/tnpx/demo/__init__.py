"""The README's demo, ``tnpx demo``: its run (:mod:`tnpx.demo.run`), settings
(:mod:`tnpx.demo.settings`), the shipped model's zero-shot part (:mod:`tnpx.demo.zero_shot`)
and the report it writes (:mod:`tnpx.demo.report`). The public names (``__all__``:
:func:`run_demo`, :class:`DemoSettings`) are imported from their module on first use.
"""

from __future__ import annotations

from ..extras import names_on_first_use

# public name -> the module of this package that defines it
_HOMES = {
    "DemoSettings": "settings",
    "run_demo": "run",
}

__all__ = sorted(_HOMES)
__getattr__ = names_on_first_use(__name__, _HOMES)
