"""Presets: the hyper-parameters with which a model computes its authors' code's function
(``build_model(name, preset=...)``, ``model.preset`` in a config), one module per source, as
``docs/fidelity.md`` is organised:

- :mod:`.kr_code`: MLGlobalHealth/dl4bi, the TNP-KR paper's code (``kr-code``);
- :mod:`.te_code`: cambridge-mlg/tnp and cambridge-mlg/tetnp, the TE paper's code
  (``te-code``, ``tnp-kr-yml``, ``released-code``);
- :mod:`.tnpd_code`: tung-nd/TNP-pytorch, the TNP-D paper's code (``tnpd-code``);
- :mod:`.bnp_code`: juho-lee/bnp, the BNP paper's code (``bnp-code``);
- :mod:`.te_paper`: the TE paper's own ablations (``no-input-adjustment``).

A preset only names options (``register_preset``): it imports no model, so the models and
their presets can be read apart. ``tnpx.models`` imports this package, which registers every
preset. The modules are imported in the order that keeps each model's presets in the order
they were registered before this package existed.
"""

from . import tnpd_code  # noqa: F401, I001  (registration side effects, in this order)
from . import kr_code  # noqa: F401
from . import bnp_code  # noqa: F401
from . import te_paper  # noqa: F401
from . import te_code  # noqa: F401

__all__: list[str] = []  # presets are registered, not imported: build_model(name, preset=...)
