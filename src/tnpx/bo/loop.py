"""The Bayesian-optimisation loop of PROTOCOLS KR-2, and the surrogates that run in it.

One run: a task's candidate locations and noiseless objective values, ``n_init`` initial
observations (the first of a random permutation), then ``n_iter`` iterations of
fit surrogate → maximise the acquisition over the candidates (re-selection allowed) → observe.
Regret after each step = best objective value observed − the task's minimum.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import torch

from ..apply.stream import ContextStream
from ..input_checks import check_option
from ..models.base import NeuralProcess
from ..models.registry import build_model
from .acquisition import make_acquisition
from .surrogate import NPSurrogate


@dataclass
class BOTask:
    """``x`` ``[n_cand, d]`` candidate locations, ``f`` ``[n_cand]`` the noiseless objective
    there, ``hyper`` the generating GP's hyper-parameters (scalars; for the oracle)."""

    x: torch.Tensor
    f: torch.Tensor
    hyper: dict = field(default_factory=dict)


@dataclass
class BORun:
    """``regret[t]``: after the initial design (t = 0) and after each iteration;
    ``seconds[t]``: wall time of iteration t (fit + acquisition + choice)."""

    regret: list[float]
    seconds: list[float]
    chosen: list[int]


# -- surrogates --------------------------------------------------------------------------------
class Surrogate:
    """Builds a BoTorch model from the observations so far (None: choose at random)."""

    label = "surrogate"

    def reset(self) -> None:
        """Forget anything carried between iterations (called at the start of each run)."""

    def fit(self, X: torch.Tensor, Y: torch.Tensor, task: BOTask):  # pragma: no cover
        raise NotImplementedError


class NeuralSurrogate(Surrogate):
    """A trained neural process: the observations become its context (no fitting).

    A model that declares ``incremental`` (``inc-tnp``) keeps its encoded context between
    iterations and adds each new observation by an update, ``O(N)`` instead of re-encoding
    the ``N`` observations (``incremental=False`` re-encodes, for comparison); the surrogate
    then decodes every candidate set against that encoding. Other models are unchanged."""

    def __init__(self, model: NeuralProcess, label: str | None = None, incremental: bool = True):
        self.model, self.label = model.eval(), label or model.name
        self.incremental = incremental and model.incremental
        self._stream: ContextStream | None = None

    def reset(self) -> None:
        self._stream = None

    def fit(self, X, Y, task):
        X, Y = X.to(torch.float32), Y.to(torch.float32)
        if not self.incremental:
            return NPSurrogate(self.model, X, Y)
        stream, n = self._stream, 0 if self._stream is None else self._stream.n_observed
        seen = stream is not None and n <= len(X)
        if not (seen and torch.equal(stream.xc[0], X[:n]) and torch.equal(stream.yc[0], Y[:n])):
            stream, n = ContextStream(self.model, X[None, :0], Y[None, :0]), 0
        if n < len(X):
            stream.add(X[None, n:], Y[None, n:])
        self._stream = stream
        return NPSurrogate(self.model, X, Y, encoding=stream.encoding)


class OracleGP(Surrogate):
    """The exact GP with the task's generating hyper-parameters and the observation noise."""

    label = "gp-oracle"

    def __init__(self, noise: float = 0.0):
        self.noise = noise

    def fit(self, X, Y, task):
        hyper = {k: task.hyper[k] for k in ("kernel", "lengthscale", "period", "variance")}
        oracle = build_model(
            "gp-oracle", X.shape[1], 1, noise_ctx=self.noise, noise_tgt=0.0, **hyper
        ).double()
        return NPSurrogate(oracle, X.double(), Y.double())


class FittedGP(Surrogate):
    """BoTorch's standard ``SingleTaskGP``, hyper-parameters refit by marginal likelihood at
    every iteration (``fit_gpytorch_mll``), starting from the previous iteration's fit within a
    run (a warm start: the same optimum, ~10× fewer L-BFGS steps than from the defaults)."""

    label = "gp-fitted"

    def __init__(self):
        self._previous: dict | None = None

    def reset(self) -> None:
        self._previous = None

    def fit(self, X, Y, task):
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from gpytorch.mlls import ExactMarginalLogLikelihood

        with warnings.catch_warnings():  # input-scaling advice and optimiser chatter
            warnings.simplefilter("ignore")
            gp = SingleTaskGP(X.double(), Y.double())
            if self._previous is not None:  # hyper-parameters only: the data transforms
                gp.load_state_dict(self._previous, strict=False)  # were fit to the new data
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        self._previous = {
            k: v.clone()
            for k, v in gp.state_dict().items()
            if not k.split(".")[0].endswith("_transform")  # outcome/input transform statistics
        }
        return gp


class RandomSearch(Surrogate):
    """Random search: each query a uniformly random candidate."""

    label = "random"

    def fit(self, X, Y, task):
        return None


# -- the loop ------------------------------------------------------------------------------------
def run_bo(
    surrogate: Surrogate,
    task: BOTask,
    n_init: int = 10,
    n_iter: int = 50,
    acquisition: str = "kr-ei",
    seed: int = 0,
    noise: float = 0.0,
    optimizer: str = "candidates",
    bounds: torch.Tensor | None = None,
) -> BORun:
    """One BO run on ``task``; see the module docstring.

    Args:
        noise: std of Gaussian noise on each observation (0 in KR-2; the regret is always
            measured on the noiseless objective).
        optimizer: ``candidates`` (maximise the acquisition over the task's locations, the
            protocol) or ``continuous`` (BoTorch's ``optimize_acqf`` over ``bounds``, then the
            nearest task location is queried).
        seed: fixes the initial design, the noise and random search's choices.
    """
    if not 1 <= n_init <= len(task.f):
        raise ValueError(f"n_init must be in 1..{len(task.f)}, got {n_init}")
    check_option("optimizer", optimizer, ("candidates", "continuous"))
    if optimizer == "continuous" and bounds is None:
        raise ValueError("optimizer='continuous' needs bounds [2, d]")
    g = torch.Generator().manual_seed(seed)
    x, f = task.x.double(), task.f.double()
    f_min = f.min().item()
    chosen = torch.randperm(len(f), generator=g)[:n_init].tolist()

    def observe(idx: list[int]) -> torch.Tensor:
        return f[idx] + noise * torch.randn(len(idx), generator=g, dtype=torch.float64)

    y = observe(chosen)
    regret, seconds = [f[chosen].min().item() - f_min], []
    surrogate.reset()
    for _ in range(n_iter):
        start = time.perf_counter()
        model = surrogate.fit(x[chosen], y[:, None], task)
        if model is None:
            pick = int(torch.randint(len(f), (1,), generator=g))
        else:
            acq = make_acquisition(acquisition, model, y.min().item())
            pick = _maximise(acq, x, optimizer, bounds)
        seconds.append(time.perf_counter() - start)
        chosen.append(pick)
        y = torch.cat([y, observe([pick])])
        regret.append(f[chosen].min().item() - f_min)
    return BORun(regret, seconds, chosen)


def _maximise(acq, x: torch.Tensor, optimizer: str, bounds: torch.Tensor | None) -> int:
    """Index of the task location to query next."""
    if optimizer == "candidates":
        with torch.no_grad():
            values = acq(x[:, None, :])  # [n_cand]
        return int(values.argmax())
    from botorch.optim import optimize_acqf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best, _ = optimize_acqf(acq, bounds.to(x), q=1, num_restarts=4, raw_samples=128)
    return int((x - best).norm(dim=-1).argmin())
