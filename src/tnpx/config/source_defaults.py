"""Model options a data source sets by default: the ``grid`` source centres each task's outputs
(``centre_outputs``) unless the config says otherwise.

Why: a gridded field's level drifts between tasks (a warmer year, a wetter season), and a
held-out period's level often lies outside the training years'. On worked example 5
(iris-sample-data's E1 maps, ``results/examples/iris-e1-maps/``) centring took the held-out 95 %
coverage from 0.877 to 0.919 and from 0.80 to 0.89 at one context point, with a higher LL at
every context size. The option is written into the config (so ``config.yaml`` and the
checkpoint record it), only where the config leaves it out and the model can centre.
"""

from __future__ import annotations

from ..data import SAMPLERS
from ..models.centring import centring_refusal
from ..models.registry import REGISTRY, options_taken


def with_source_defaults(values: dict) -> dict:
    """``values`` (a config's plain dict of sections) with the model options its data source
    sets by default added where the model section leaves them out (a new dict; the input is
    not changed)."""
    data, model = values.get("data") or {}, values.get("model") or {}
    source = SAMPLERS.get(data.get("name")) if isinstance(data, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    if source is None or name not in REGISTRY or "centre_outputs" in model:
        return values
    if not getattr(source[0], "centres_outputs_by_default", False):
        return values
    cls = REGISTRY[name]
    if not options_taken(name, {"centre_outputs": True}):
        return values  # a model without a likelihood head (gp, context-moments)
    if centring_refusal(cls, model.get("likelihood", "heteroscedastic")):
        return values
    return {**values, "model": {**model, "centre_outputs": True}}
