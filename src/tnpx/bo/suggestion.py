"""The next point(s) to evaluate, given a user's observations: :func:`suggest`.

Ask-and-tell BO with a trained neural process: the observations become the model's context, a
BoTorch acquisition for minimisation is maximised over the box by ``optimize_acqf``, and the
chosen points are returned in the user's units. A checkpoint trained on the user's data maps
the observations with the normalisation it stores (:class:`~tnpx.bo.NPSurrogate`, "Units");
any other model has its inputs mapped from the search box onto its training domain and the
outputs standardised by the observations.
"""

from __future__ import annotations

import warnings

import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models.model import Model

from .acquisition import make_acquisition
from .surrogate import NPSurrogate, stored_map


def suggest(
    model,
    X: torch.Tensor,
    Y: torch.Tensor,
    bounds: torch.Tensor,
    acquisition: str = "logei",
    q: int = 1,
    domain: tuple[float, float] | None = None,
    num_restarts: int = 8,
    raw_samples: int = 256,
    seed: int = 0,
    scaling: str = "auto",
    maximise: bool = False,
) -> torch.Tensor:
    """``q`` points ``[q, d]`` inside ``bounds`` at which to evaluate next, to *minimise* y
    (to maximise it with ``maximise``).

    Args:
        model: a :class:`~tnpx.NeuralProcess`, a checkpoint path or a pretrained model's name.
        X: ``[n, d]`` inputs observed so far; Y: ``[n, 1]`` (or ``[n]``) their values.
        bounds: ``[2, d]``: lower and upper corner of the search box (the user's units).
        acquisition: a name from :data:`tnpx.bo.ACQUISITIONS`; with ``q > 1`` use a ``q*`` one
            (the q points are chosen jointly by BoTorch, sequentially-greedy).
        domain: the model's training input domain, when the checkpoint does not record one
            (unused where a stored normalisation maps the inputs).
        seed: seeds BoTorch's random restarts.
        scaling: ``"auto"``: a checkpoint trained on your data maps X and Y with the
            normalisation it stores, any other model with the box and the observations' maps;
            ``"context"``: those maps always; ``"stored"``: the stored one, or fail
            (:class:`~tnpx.bo.NPSurrogate`).
        maximise: choose points to maximise y. The model is given Y as observed (a model
            trained on your data never sees it negated) and the acquisition minimises ``-y``.
    """
    from ..apply.predict import resolve

    resolved = resolve(model)  # a name or path: tnpx.zoo.checkpoint_file
    net, recorded, why = resolved[:3]
    domain = domain or recorded
    if domain is None and stored_map(resolved, scaling) is None:
        warnings.warn(
            f"no training domain ({why}): inputs go to the model unscaled; pass domain=",
            stacklevel=2,
        )
    X = torch.as_tensor(X, dtype=torch.float64)
    Y = torch.as_tensor(Y, dtype=torch.float64).reshape(len(X), -1)
    bounds = torch.as_tensor(bounds, dtype=torch.float64)
    if bounds.shape != (2, net.dim_x) or not (bounds[1] > bounds[0]).all():
        raise ValueError(
            f"bounds: expected [2, {net.dim_x}] with lower < upper per column, got "
            f"{bounds.tolist()}"
        )
    if q < 1:
        raise ValueError(f"q must be >= 1, got {q}")
    if q > 1 and not acquisition.startswith("q"):
        raise ValueError(f"q={q} needs a joint (q*) acquisition, got {acquisition!r}")
    if len(X) == 0:
        raise ValueError("suggest needs at least one observation")
    surrogate = NPSurrogate(
        resolved, X, Y, bounds=bounds, domain=domain, standardize=True, scaling=scaling
    )
    objective = Negated(surrogate) if maximise else surrogate
    acq = make_acquisition(acquisition, objective, (-Y if maximise else Y).min().item())
    from botorch.optim import optimize_acqf

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        points, _ = optimize_acqf(
            acq,
            bounds,
            q=q,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
            sequential=q > 1,
        )
    return points.detach()


class Negated(Model):
    """``-y`` under a single-output BoTorch model: an acquisition that minimises it maximises
    y, while the model itself is conditioned on y as observed."""

    def __init__(self, model: Model):
        super().__init__()
        self.model = model

    @property
    def num_outputs(self) -> int:
        return 1

    def posterior(self, X, output_indices=None, observation_noise=False, posterior_transform=None):
        """The posterior of ``-y`` at ``X [..., q, d]``."""
        weights = torch.tensor([-1.0], dtype=X.dtype, device=X.device)
        negated = ScalarizedPosteriorTransform(weights)(self.model.posterior(X, output_indices))
        return posterior_transform(negated) if posterior_transform is not None else negated
