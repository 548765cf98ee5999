"""The sections of an experiment config as typed dataclasses (:class:`ExperimentConfig` and
its ``optim``, ``schedule``, ``train`` and ``eval`` sections), each field with its default and
the rule its values must follow (:mod:`tnpx.config.rules`). Reading and checking a config is
:mod:`tnpx.config.experiment` and :mod:`tnpx.config.checks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .rules import (
    adam_betas,
    at_least,
    device_name,
    fraction,
    non_empty,
    non_negative,
    one_of,
    optional,
    positive,
    positive_values,
    precision_name,
    ruled,
)

# Keys of the model section besides the model's own hyper-parameters.
# preset: null says "no preset" (a config whose base config names one for another model)
MODEL_KEYS = {"name": str, "dim_x": int, "dim_y": int, "preset": str | None}


# The optimisers tnpx.training.optim builds; schedulefree-adamw takes schedule.name: constant.
OPTIMISERS = ("adamw", "adam", "yogi", "schedulefree-adamw")

# train.precision, as Lightning names them (src/tnpx/training/precision.py)
PRECISIONS = ("32", "bf16-mixed", "16-mixed")


@dataclass
class OptimConfig:
    name: str = ruled(one_of(*OPTIMISERS, fold_case=True), "adamw")
    lr: float = ruled(positive(), 1e-3)
    weight_decay: float = ruled(non_negative(), 0.0)
    betas: list[float] = ruled(adam_betas(), default_factory=lambda: [0.9, 0.999])
    # {parameter-name prefix: factor}: those parameters train at lr * factor, e.g.
    # {likelihood: 100} lets a homoscedastic noise scale converge within a short budget
    lr_multipliers: dict[str, float] = ruled(positive_values(), default_factory=dict)


# The default warm-up, a share of the run's steps: the time-to-accuracy recipe's 1,000 of
# 25,000 (results/time-to-accuracy/).
WARMUP_SHARE = 0.04


@dataclass
class ScheduleConfig:
    name: str = ruled(one_of("cosine", "constant"), "cosine")
    # None: WARMUP_SHARE of train.steps. The paper configs state theirs (fidelity).
    warmup_steps: int | None = ruled(optional(at_least(0)), None)
    min_lr_ratio: float = ruled(fraction(), 0.01)  # final lr = lr * min_lr_ratio

    def warmup(self, total_steps: int) -> int:
        """The warm-up steps of a run of ``total_steps``: ``warmup_steps``, or by default
        :data:`WARMUP_SHARE` of the run (rounded)."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return round(WARMUP_SHARE * total_steps)


@dataclass
class TrainConfig:
    steps: int = ruled(at_least(1), 1000)
    seed: int = ruled(at_least(0), 0)
    clip_value: float | None = ruled(optional(positive()), None)  # gradient values (TE: 0.5)
    clip_norm: float | None = ruled(optional(positive()), None)  # global norm (TNP-KR: 3.0)
    log_every: int = ruled(at_least(1), 50)
    val_every: int = ruled(at_least(1), 500)
    val_batches: int = ruled(at_least(1), 8)
    checkpoint_every: int = ruled(at_least(1), 500)
    out_dir: str = ruled(non_empty(), "runs/default")
    device: str = ruled(device_name(), "auto")
    progress: bool = True
    # Sample the next batch in a background thread (the same numbers). It saves the sampler's
    # share of a step where a core is idle (results/perf/train_profile.md: 0.85x for cnp on a
    # quiet machine); off by default because the long runs go two at a time on two cores,
    # where the worker competes with the other run (a busy-machine A/B measured 1.02-1.21x).
    prefetch: bool = False
    # Start from the weights of a checkpoint (a path or a pretrained model's name): fine-tuning.
    # The model section must build the same architecture; optimiser and schedule start afresh.
    # A resumed run ignores it (its own checkpoint holds the weights).
    init_from: str | None = ruled(optional(non_empty()), None)
    # Initial weights of a fresh run: each layer's torch default, or Flax's lecun_normal
    # (src/tnpx/weight_init.py). Ignored by init_from and by a resumed run.
    weight_init: str = ruled(one_of("default", "lecun_normal"), "default")
    # model.pt holds the best validated weights (best.pt keeps them); patience N: stop after N
    # validations without a better LL (implies keep_best). src/tnpx/training/best.py
    keep_best: bool = False
    # Validate and save an exponential moving average of the weights, this decay per step
    # (e.g. 0.999); None: the raw weights. src/tnpx/training/ema.py
    ema_decay: float | None = ruled(optional(fraction(high_open=True)), None)
    patience: int | None = ruled(optional(at_least(1)), None)
    # 32: float32 throughout; bf16-mixed / 16-mixed: the forward and loss under autocast
    # (16-mixed with a gradient scaler). src/tnpx/training/precision.py
    precision: str | int = ruled(precision_name(PRECISIONS), "32")
    # torch.compile the step's forward and loss (dynamic shapes). src/tnpx/training/compiled.py
    compile: bool = False

    def __post_init__(self) -> None:
        self.precision = str(self.precision)  # YAML reads `precision: 32` as a number


@dataclass
class EvalConfig:
    n_batches: int = ruled(at_least(1), 64)
    batch_size: int = ruled(at_least(1), 16)
    seed: int = ruled(at_least(0), 0)  # fixes the test set, whatever the training seed
    data: dict = field(default_factory=dict)  # sampler options that differ at test time


@dataclass
class ExperimentConfig:
    name: str = "experiment"
    description: str = ""
    protocol: str = ruled(one_of("exact", "budget"), "budget")  # exact: PROTOCOLS.md's
    model: dict = field(default_factory=lambda: {"name": "tnp", "dim_x": 1, "dim_y": 1})
    data: dict = field(default_factory=lambda: {"name": "gp", "batch_size": 16})
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def model_options(self) -> dict:
        """Hyper-parameter overrides for ``build_model`` (the model section minus its name/dims)."""
        return {k: v for k, v in self.model.items() if k not in ("name", "dim_x", "dim_y")}

    def data_options(self, test: bool = False) -> dict:
        """Sampler options (the data section minus name/batch_size), with eval overrides; a
        non-Gaussian ``model.likelihood`` is passed on as the option ``likelihood`` to a
        source that takes it (table, grid, stations: scaling and checks by the family)."""
        opts = {k: v for k, v in self.data.items() if k not in ("name", "batch_size")}
        opts = {**opts, **self.eval.data} if test else opts
        return with_model_likelihood(self.data["name"], opts, self.model.get("likelihood"))


def with_model_likelihood(name: str, opts: dict, likelihood) -> dict:
    """``opts`` with ``likelihood`` where it names a family other than ``gaussian`` and the
    sampler ``name`` takes the option (a gaussian model's options stay exactly as written).

    Raises:
        ValueError: the data section sets another ``likelihood`` than the model's (one line).
    """
    from ..data import sampler_options
    from ..likelihoods import family_of

    if likelihood is None or family_of(likelihood) == "gaussian":
        return opts
    if "likelihood" not in sampler_options(name):
        return opts
    if opts.get("likelihood", likelihood) != likelihood:
        raise ValueError(
            f"data.likelihood = {opts['likelihood']!r} but model.likelihood = {likelihood!r}: "
            "the data source takes the model's; remove data.likelihood"
        )
    return {**opts, "likelihood": likelihood}
