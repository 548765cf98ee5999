"""The adaptive midpoint rule over a GP prior's hyper-parameters that :mod:`.average` integrates
with: :class:`HyperGrid` (the prior's box and the rule's options) and its :class:`Cells`."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Protocol

import torch

from .kernels import canonical_kernel


class GPPrior(Protocol):
    """What the grid reads of a GP prior: the fields of ``tnpx.data.synthetic.gp.GPConfig``
    (named here, not imported: ``data/`` imports ``gp/``, so the arrow may not run back up)."""

    dim_x: int
    kernels: list[str]
    lengthscale_prior: str
    lengthscale_a: float
    lengthscale_b: float
    period_prior: str
    period_min: float
    period_max: float
    noise_prior: str
    noise_ctx: float
    noise_tgt: float
    noise_range: list[float]
    variance: float


@dataclass(frozen=True)
class HyperGrid:
    """An adaptive midpoint rule over a GP prior's hyper-parameters.

    Each kernel has prior weight ``1 / len(kernels)`` (the samplers pick one uniformly). Its
    (log lengthscale, frequency = 1 / period) box starts as ``n_lengthscale × n_period`` equal
    cells, each holding its prior mass (the frequency axis for the periodic kernel only; an
    axis whose prior is fixed has one cell of zero width). Equal cells in frequency, not in
    period: the evidence's peaks are about equally wide in frequency (a phase error grows as
    the range over the period squared). Then, round by round, the cells whose posterior mass
    is at least ``keep`` times the largest cell's (at most ``max_split``, the heaviest) are
    split in two along each axis of positive width, until the rule's estimate of the evidence
    ``log p(y_c)`` has moved by less than ``tolerance`` in two rounds running, or after
    ``refinements`` rounds (low-noise periodic tasks need ~10: their evidence peaks are
    narrower than the starting cells by ~2^10). The observation
    noise has a fixed grid of ``n_noise`` log-spaced midpoints, integrated exactly for every
    cell at the cost of one (cheap) sum per level.

    Attributes:
        kernels: kernel names.
        log_lengthscale: ``(lo, hi)`` of the log-uniform lengthscale (``lo == hi``: fixed).
        period: ``(lo, hi)`` of the uniform period.
        noises: ``[n_noise]`` observation noise stds, float64.
        variance: the prior's output variance (fixed).
        noisy_targets: the targets carry the observation noise (TE protocol and the zoo's
            log-uniform noise prior) rather than being the noiseless function (KR protocol).
        target_noise: the targets' noise std when it is fixed and differs from the context's.
    """

    kernels: tuple[str, ...]
    log_lengthscale: tuple[float, float]
    period: tuple[float, float]
    noises: torch.Tensor
    variance: float = 1.0
    noisy_targets: bool = True
    target_noise: float | None = None
    n_lengthscale: int = 12
    n_period: int = 96
    refinements: int = 16
    keep: float = 1e-3
    max_split: int = 48
    tolerance: float = 1e-3

    @classmethod
    def from_config(cls, config: GPPrior, n_noise: int = 64, **options) -> HyperGrid:
        """The grid of ``config``'s prior (``options``: ``n_lengthscale``, ``n_period``,
        ``refinements``, ``keep``, ``max_split``, ``tolerance``).

        Raises:
            ValueError: a prior this grid cannot represent (a Beta lengthscale prior, a period
                tied to the lengthscale, inputs of more than one dimension) or a grid size < 1.
        """
        sizes = [n_noise, options.get("n_lengthscale", 1), options.get("n_period", 1)]
        if min(sizes) < 1 or options.get("refinements", 0) < 0:
            raise ValueError(f"grid sizes must be >= 1 and refinements >= 0, got {options}")
        if config.dim_x != 1:
            raise ValueError(f"HyperGrid supports dim_x = 1 only, got {config.dim_x}")
        if config.lengthscale_prior == "loguniform":
            log_ls = (math.log(config.lengthscale_a), math.log(config.lengthscale_b))
        elif config.lengthscale_prior == "fixed":
            log_ls = (math.log(config.lengthscale_a),) * 2
        else:
            raise ValueError(
                f"lengthscale_prior={config.lengthscale_prior!r} has no grid here; "
                "use 'loguniform' or 'fixed'"
            )
        if config.period_prior != "uniform":
            raise ValueError(
                f"period_prior={config.period_prior!r} has no grid here; use 'uniform'"
            )
        if config.noise_prior == "loguniform":
            noises = _midpoints(*(math.log(v) for v in config.noise_range), n_noise).exp()
            noisy, target_noise = True, None
        else:
            noises = torch.tensor([float(config.noise_ctx)], dtype=torch.float64)
            noisy, target_noise = config.noise_tgt > 0, float(config.noise_tgt)
        return cls(
            tuple(canonical_kernel(k) for k in config.kernels),
            log_ls,
            (float(config.period_min), float(config.period_max)),
            noises,
            float(config.variance),
            noisy,
            target_noise,
            **options,
        )

    def initial_cells(self, kernel: str) -> Cells:
        """``kernel``'s starting cells, their prior masses summing to ``1 / len(kernels)``."""
        log_ls = _cells_on(self.log_lengthscale, self.n_lengthscale)
        # The frequency axis is the periodic kernel's alone (others: one cell of zero width).
        lo, hi = self.period
        freq = _cells_on((1 / hi, 1 / lo) if kernel == "periodic" else (1.0, 1.0), self.n_period)
        (lc, lh), (fc, fh) = log_ls, freq
        lc, fc = (t.reshape(-1) for t in torch.meshgrid(lc, fc, indexing="ij"))
        lh, fh = (t.reshape(-1) for t in torch.meshgrid(lh, fh, indexing="ij"))
        # Prior mass: kernel, then an equal share of the lengthscale axis, then the period's
        # (uniform in period, so a frequency cell [f - h, f + h] holds 1/(f-h) - 1/(f+h)).
        period_share = torch.where(fh > 0, (1 / (fc - fh) - 1 / (fc + fh)) / (hi - lo), 1.0)
        log_mass = period_share.log() - math.log(len(self.kernels) * log_ls[0].numel())
        return Cells(lc, lh, fc, fh, log_mass)


def _lower_period_share(f: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Share of a frequency cell ``[f - h, f + h]``'s (uniform-in-period) prior mass that its
    lower half ``[f - h, f]`` holds."""
    return (1 / (f - h) - 1 / f) / (1 / (f - h) - 1 / (f + h))


def _midpoints(lo: float, hi: float, n: int) -> torch.Tensor:
    return lo + (hi - lo) * (torch.arange(n, dtype=torch.float64) + 0.5) / n


def _cells_on(bounds: tuple[float, float], n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Midpoints ``[n']`` and half-widths ``[n']`` of ``n`` equal cells on ``bounds`` (one
    cell of zero width when the bounds coincide)."""
    lo, hi = bounds
    if hi <= lo:
        return torch.tensor([lo], dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    return _midpoints(lo, hi, n), torch.full((n,), (hi - lo) / (2 * n), dtype=torch.float64)


@dataclass
class Cells:
    """Cells of the (log lengthscale, frequency) box: midpoints, half-widths and log prior
    masses, ``[n_cells]`` each."""

    log_lengthscale: torch.Tensor
    lengthscale_half: torch.Tensor
    frequency: torch.Tensor
    frequency_half: torch.Tensor
    log_mass: torch.Tensor

    def split(self) -> Cells:
        """Each cell into two halves along each axis of positive width, the parent's prior
        mass shared as the prior says (log-uniform lengthscale: equally; uniform period: by
        the period range each half covers)."""
        by_lengthscale = self._halve("log_lengthscale", "lengthscale_half", lambda c, h: 0.5)
        return by_lengthscale._halve("frequency", "frequency_half", _lower_period_share)

    def _halve(self, centre: str, half: str, lower_share) -> Cells:
        wide = getattr(self, half) > 0
        parents, narrow = self.select(wide), self.select(~wide)
        c, h = getattr(parents, centre), getattr(parents, half)
        share = torch.as_tensor(lower_share(c, h), dtype=c.dtype)
        low = replace(
            parents, **{centre: c - h / 2, half: h / 2, "log_mass": parents.log_mass + share.log()}
        )
        high = replace(
            parents,
            **{centre: c + h / 2, half: h / 2, "log_mass": parents.log_mass + (-share).log1p()},
        )
        return concat_cells(concat_cells(narrow, low), high)

    def select(self, keep: torch.Tensor) -> Cells:
        return Cells(*(getattr(self, f.name)[keep] for f in fields(self)))


def concat_cells(a: Cells, b: Cells) -> Cells:
    return Cells(*(torch.cat([getattr(a, f.name), getattr(b, f.name)]) for f in fields(a)))
