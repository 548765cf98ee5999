"""How far beyond its context a model's predictive stays calibrated: its *safe range*.

A neural process is trained on tasks whose targets lie within a fixed distance of the context;
beyond it the model meets inputs it never saw and may become confidently wrong (the
first `gp1d-v2-te-tnp-rope` predicted a std of 0.003 two context widths away). This module
measures that on held-out tasks of a prior, through the same unit maps :func:`tnpx.predict`
applies to a user's data (:func:`tnpx.apply.unit_choice.fit_units`: the context's input range
onto the training domain, outputs standardised by the context's mean and std), so a distance
here means what it means to :func:`tnpx.predict`:

    distance = how far a target lies outside the context's input range, in context-range
               widths (the largest over input columns; 0 inside the range).

:func:`distance_profile` bins each target by that distance and reports, per bin, the 95 %
interval's coverage, the share of targets beyond 5 predicted standard deviations, the mean
predicted std and the LL, all in the task's own units. :func:`safe_range` reads the profile:
the furthest bin edge up to which every bin's coverage stays within a band and the std has not
shrunk, and a hard limit beyond which the profile gives no evidence at all. The zoo's cards
record both (``experiments/zoo/safe_range.py``), and :func:`tnpx.predict` warns past the
first and refuses past the second.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..apply.unit_choice import fit_units, target_distance
from ..config import ExperimentConfig
from ..data import TaskSampler, batch_at
from ..models import NeuralProcess

# Bin edges in context widths: the inside (0), then ever wider rings beyond the context.
DEFAULT_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
Z95 = 1.959963984540054  # the 95 % central interval of a Gaussian, in standard deviations


@dataclass
class DistanceBin:
    """Scores of the targets whose distance lies in ``(low, high]`` (``low = high = 0``: the
    targets inside the context's range). ``mean_std`` is in context-std units (the task's
    outputs divided by its context's std), so bins of tasks with different scales average."""

    low: float
    high: float
    n: int
    coverage95: float
    beyond_5sd: float
    mean_std: float
    ll: float


# The held-out tasks of a profile: targets out to 3 widths of a full context ([-2, 2] -> +-14),
# contexts of at least 3 points (fewer have no range to measure in), raw prior draws.
PROFILE_TARGETS = dict(tgt_range=[-14.0, 14.0], n_tgt=200, min_ctx=3, context_scaling=0.0)
PRIORS_1D = ("gp", "gp-composite")
PRIOR_2D = "gp2d-composite"


def profile_targets(cfg: ExperimentConfig) -> dict:
    """The sampler overrides that draw a profile's targets for ``cfg``'s prior: the 1D priors'
    :data:`PROFILE_TARGETS`; for ``gp2d-composite`` the same reach in 2D, targets uniform on
    the context box widened by ``DEFAULT_EDGES[-1]`` of its widths on every side (``[-2, 2]²``
    -> ``[-14, 14]²``: distance is the largest over the columns, so a box, not a ring), as many
    targets, no target grid and raw draws. Its prior's 10 or more context points need no floor.

    Raises:
        ValueError: ``cfg`` trains on none of these priors.
    """
    name = cfg.data["name"]
    if name in PRIORS_1D:
        return dict(PROFILE_TARGETS)
    if name != PRIOR_2D:
        priors = ", ".join((*PRIORS_1D, PRIOR_2D))
        raise ValueError(f"{cfg.name}: a prior profile needs {priors} data, got {name!r}")
    from ..data.synthetic.gp2d_composite import GP2DCompositeConfig

    low, high = cfg.data_options(test=True).get("box", GP2DCompositeConfig().box)
    reach = DEFAULT_EDGES[-1] * (high - low)
    return {
        "tgt_box": [low - reach, high + reach],
        "n_tgt": PROFILE_TARGETS["n_tgt"],
        "n_grid": 0,
        "context_scaling": 0.0,  # raw prior draws, as the 1D profiles'
    }


def prior_profile_sampler(cfg: ExperimentConfig) -> TaskSampler:
    """The held-out tasks a GP-prior model's profile is measured on: its own training prior
    (``cfg``'s ``gp``, ``gp-composite`` or ``gp2d-composite`` data, test split, ``eval.seed``)
    with targets drawn far beyond the context (:func:`profile_targets`).

    Raises:
        ValueError: ``cfg`` trains on another sampler, or not in the ``uniform`` layout.
    """
    from .protocol import build_test_sampler

    sampler = build_test_sampler(cfg, **profile_targets(cfg))
    # the 2D prior has no layout option: its targets are always drawn apart from the context
    layout = getattr(sampler.config, "layout", "uniform")
    if layout != "uniform":
        raise ValueError(
            f"{cfg.name}: a prior profile needs the uniform layout (targets drawn apart from "
            f"the context), got {layout!r}"
        )
    return sampler


@torch.no_grad()
def task_scores(
    model: NeuralProcess, domain, xc: np.ndarray, yc: np.ndarray, xt: np.ndarray, yt: np.ndarray
) -> dict[str, np.ndarray]:
    """One task through :func:`tnpx.predict`'s unit maps: per target ``[n_tgt]`` the
    distance, the z-score of the truth (``dim_y = 1``... or its first output), the predicted
    std in context-std units and the LL in the task's units."""
    with warnings.catch_warnings():  # a narrow context's warning is predict's, not ours
        warnings.simplefilter("ignore")
        units, _ = fit_units(xc, yc, xt, [], [], domain, None, True, None)
    dtype = next(model.parameters()).dtype
    tensor = lambda a: torch.as_tensor(np.asarray(a), dtype=dtype)[None]  # noqa: E731
    pred = model(tensor(units.inputs(xc)), tensor(units.outputs(yc)), tensor(units.inputs(xt)))
    mean = units.mean_to_user(pred.mean[0].double().numpy())
    std = units.std_to_user(pred.stddev[0].double().numpy())
    z = (yt - mean) / std
    ll = -0.5 * z**2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    return {
        "distance": target_distance(xc, xt),
        "z": z[:, 0],
        "std": (std / units.y.scale)[:, 0],
        "ll": ll[:, 0],
    }


def distance_profile(
    model: NeuralProcess,
    sampler: TaskSampler,
    n_batches: int,
    domain,
    edges=DEFAULT_EDGES,
    progress: bool = False,
) -> list[DistanceBin]:
    """Score ``model`` on batches ``0..n_batches-1`` of ``sampler``'s test split, each task
    alone through :func:`tnpx.predict`'s unit maps onto ``domain`` (the model's training
    domain), binned by target distance (module docstring). Draw the tasks' targets well beyond
    their contexts (a sampler with a wide ``tgt_range``) so every bin fills.

    Returns one :class:`DistanceBin` per bin: the inside, then ``(edges[i], edges[i+1]]``.
    Targets beyond the last edge are not scored.
    """
    model = model.eval()
    parts: list[dict[str, np.ndarray]] = []
    batches = range(n_batches)
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc="distance profile")
    for i in batches:
        batch = batch_at(sampler, i, split="test")
        if batch.mask_c is not None:
            raise ValueError("distance_profile needs a sampler without context masks")
        for b in range(batch.xc.shape[0]):
            xc, yc = batch.xc[b].double().numpy(), batch.yc[b].double().numpy()
            if len(np.unique(xc, axis=0)) < 2:
                continue  # no range to measure distances in (predict widens it; not ours)
            xt, yt = batch.xt[b].double().numpy(), batch.yt[b].double().numpy()
            parts.append(task_scores(model, domain, xc, yc, xt, yt))
    pooled = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    bins = [(0.0, 0.0)] + list(zip(edges[:-1], edges[1:]))
    out = []
    for low, high in bins:
        d = pooled["distance"]
        sel = d == 0 if high == 0 else (d > low) & (d <= high)
        z = pooled["z"][sel]
        out.append(
            DistanceBin(
                low=float(low),
                high=float(high),
                n=int(sel.sum()),
                coverage95=float((np.abs(z) <= Z95).mean()) if len(z) else float("nan"),
                beyond_5sd=float((np.abs(z) > 5).mean()) if len(z) else float("nan"),
                mean_std=float(pooled["std"][sel].mean()) if len(z) else float("nan"),
                ll=float(pooled["ll"][sel].mean()) if len(z) else float("nan"),
            )
        )
    return out


@dataclass
class SafeRange:
    """``widths``: how far beyond the context (in context widths) every bin of the profile
    was calibrated (coverage at least ``min_coverage``) and no bin's mean std fell below
    ``shrink`` times the previous one's; ``hard_limit``: how far the profile held any evidence
    (coverage at least ``floor_coverage`` and no collapse); beyond it predict refuses."""

    widths: float
    hard_limit: float
    min_coverage: float
    floor_coverage: float
    shrink: float

    def as_dict(self) -> dict:
        return asdict(self)


def safe_range(
    profile: list[DistanceBin],
    min_coverage: float = 0.90,
    floor_coverage: float = 0.80,
    shrink: float = 0.8,
    min_targets: int = 100,
) -> SafeRange:
    """The safe range and hard limit of a :func:`distance_profile` (see :class:`SafeRange`).
    Bins are read outward from the inside; a bin with fewer than ``min_targets`` targets ends
    the reading (no evidence). A model that fails already inside its context gets 0."""

    def reach(least: float) -> float:
        edge, last_std = 0.0, None
        for b in profile:
            ok = b.n >= min_targets and b.coverage95 >= least
            if last_std is not None:
                ok = ok and b.mean_std >= shrink * last_std
            if not ok:
                break
            edge, last_std = b.high, b.mean_std
        return edge

    return SafeRange(
        widths=reach(min_coverage),
        hard_limit=reach(floor_coverage),
        min_coverage=min_coverage,
        floor_coverage=floor_coverage,
        shrink=shrink,
    )
