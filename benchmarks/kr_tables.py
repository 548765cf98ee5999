"""KR-1 and KR-3 tables (TNP-KR Tables 3 and 5): NLL of the baselines and TNP-KR on GP tasks.

NLL per target point on 1D GP tasks (RBF, periodic, Matérn-3/2) and 2D RBF GP tasks.

Each cell (table, kernel, model) trains the model from the kernel's config with
``model.name=<model>`` (resuming an interrupted run, reusing a finished one), scores it on the
config's fixed test set, and is cached as JSON under ``<out>/<table>/cells/``: a stopped table
keeps its finished cells and a re-run skips them. After every cell the table's ``README.md``,
``results.json`` and ``nll_vs_paper.png`` are rewritten; cells not run yet show as "—".

    python benchmarks/kr_tables.py                          # both tables, budget configs
    python benchmarks/kr_tables.py --tables kr1 --models cnp tnp-d --kernels rbf
    python benchmarks/kr_tables.py --exact    # the paper's protocol (GPU-scale): results/exact/
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from tnpx.config import ExperimentConfig, config_to_yaml, load_config
from tnpx.evaluate import Metrics, build_test_sampler, evaluate
from tnpx.models import build_model
from tnpx.report import command_line, git_commit, hardware
from tnpx.train import resolve_device, train_or_load

ROOT = Path(__file__).resolve().parents[1]
ORACLE = "gp-oracle"
LATENT = ("np", "anp", "bnp", "banp")  # predict a K-component mixture; LL is an estimate
KERNEL_LABELS = {"matern32": "Matérn-3/2", "periodic": "periodic", "rbf": "RBF"}


@dataclass(frozen=True)
class TableSpec:
    """One table of the TNP-KR paper: its kernels, models and published NLLs."""

    name: str
    title: str
    what: str
    kernels: tuple[str, ...]
    models: tuple[str, ...]  # gp-oracle last; it is evaluated, never trained
    paper: dict[str, dict[str, float]]  # model -> kernel -> NLL (mean over 5 seeds)
    paper_batch: int

    def config_path(self, kernel: str, exact: bool) -> Path:
        stem = "kr3" if self.name == "kr3" else f"kr1-{kernel}"
        return ROOT / "configs" / f"{stem}{'' if exact else '-budget'}.yaml"


def _by_kernel(kernels: tuple[str, ...], rows: dict[str, tuple[float, ...]]) -> dict:
    return {model: dict(zip(kernels, values, strict=True)) for model, values in rows.items()}


KR1_KERNELS = ("matern32", "periodic", "rbf")  # the paper's column order
TABLES = {
    "kr1": TableSpec(
        name="kr1",
        title="KR-1: 1D GP regression (TNP-KR Table 3)",
        what="1D GP tasks on [−2, 2], one training run per kernel (RBF, periodic, Matérn-3/2); "
        "50 random + 100 grid locations, 3–49 of the random ones are context (noise 0.1), "
        "targets are the noiseless function at all 150",
        kernels=KR1_KERNELS,
        models=(
            "np",
            "cnp",
            "bnp",
            "anp",
            "canp",
            "banp",
            "convcnp",
            "tnp-d",
            "tnp-kr-fast",
            "tnp-kr-full",
            ORACLE,
        ),
        paper=_by_kernel(
            KR1_KERNELS,
            {
                "np": (0.638, 1.342, 0.338),
                "cnp": (0.547, 1.165, 0.238),
                "bnp": (0.523, 1.165, 0.165),
                "anp": (0.043, 0.829, -0.341),
                "canp": (0.047, 0.818, -0.310),
                "banp": (0.023, 0.761, -0.347),
                "convcnp": (-0.018, 0.543, -0.456),
                "tnp-d": (-0.023, 0.516, -0.455),
                "tnp-kr-fast": (-0.006, 0.562, -0.425),
                "tnp-kr-full": (-0.024, 0.516, -0.453),
            },
        ),
        paper_batch=32,
    ),
    "kr3": TableSpec(
        name="kr3",
        title="KR-3: 2D GP regression (TNP-KR Table 5)",
        what="2D RBF GP tasks on [−2, 2]²; 128 random locations + a 16×16 grid, 12–127 of the "
        "random ones are context (noise 0.1), targets are the noiseless function at all 384",
        kernels=("rbf",),
        models=("np", "cnp", "anp", "canp", "tnp-d", "tnp-kr-fast", "tnp-kr-full", ORACLE),
        paper=_by_kernel(
            ("rbf",),
            {
                "np": (1.209,),
                "cnp": (1.174,),
                "anp": (0.753,),
                "canp": (0.611,),
                "tnp-d": (0.484,),
                "tnp-kr-fast": (0.554,),
                "tnp-kr-full": (0.482,),
            },
        ),
        paper_batch=16,
    ),
}

# Model options at the CPU budget: every model near 120-140k parameters (the budget TNP-D has
# 117k), keeping each architecture's shape (ANP/CANP: 2 attention layers; ConvCNP: a 7-layer
# UNet whose receptive field, ~2.8 input units, still covers the longest period) and shrinking
# its width. The exact protocol uses none of these: the library defaults are the papers' sizes.
TRANSFORMER = {"dim_model": 64, "n_layers": 3, "n_heads": 4, "dim_head": 16, "dim_ff": 128}
ATTENTIVE = {"dim_model": 64, "n_layers": 2, "n_heads": 4, "dim_head": 16, "dim_ff": 128}
BUDGET_SIZES: dict[str, dict] = {
    "cnp": {"dim_model": 128},  # ~116k: the paper's width; a 64-wide CNP would have 30k
    "bnp": {"dim_model": 128},  # ~133k
    "np": {"dim_model": 96, "dim_latent": 64},  # ~140k (two encoders)
    "canp": ATTENTIVE,  # ~126k
    "banp": ATTENTIVE,  # ~130k
    # ANP has a second attentive encoder (the latent path): narrower to stay near the others
    "anp": {**ATTENTIVE, "dim_model": 48, "dim_head": 12, "dim_ff": 96, "dim_latent": 48},
    "convcnp": {"dim_model": 40, "n_layers": 7},  # ~134k; 1D only (not in KR-3)
    "tnp-d": TRANSFORMER,  # ~117k
    "tnp-kr-full": TRANSFORMER,  # ~126k (KR token and head MLPs at their published widths)
    "tnp-kr-fast": TRANSFORMER,  # ~126k
    ORACLE: {},
}

# Config keys that do not change a cell's numbers (so a cached cell stays valid without them).
NEUTRAL_TRAIN_KEYS = ("out_dir", "progress", "device")


@dataclass
class Cell:
    """One (table, kernel, model) result, as cached in ``cells/<kernel>-<model>.json``."""

    table: str
    kernel: str
    model: str
    protocol: str
    metrics: Metrics
    ll_estimator: str
    parameters: int
    model_options: dict
    steps: int
    batch_size: int
    test_tasks: int
    train_seconds: float | None  # None: no training (gp-oracle) or not recorded
    eval_seconds: float
    commit: str
    hardware: str
    settings: dict = field(default_factory=dict)  # the config keys that produced the numbers

    @property
    def nll(self) -> float:
        return -self.metrics.ll

    @property
    def nll_se(self) -> float:
        return self.metrics.ll_se

    @property
    def wall_seconds(self) -> float:
        return (self.train_seconds or 0.0) + self.eval_seconds

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Cell:
        values = json.loads(text)
        return cls(**{**values, "metrics": Metrics(**values["metrics"])})


# --- running cells ----------------------------------------------------------------------


def cell_path(out: Path, table: str, kernel: str, model: str) -> Path:
    return out / table / "cells" / f"{kernel}-{model}.json"


def run_dir(runs: Path, table: str, kernel: str, model: str) -> Path:
    return runs / f"{table}-{kernel}" / model


def cell_overrides(model: str, exact: bool) -> list[str]:
    """``model.name`` and, at the budget, the model's sizes from :data:`BUDGET_SIZES`."""
    sizes = {} if exact else BUDGET_SIZES[model]
    return [f"model.name={model}", *(f"model.{k}={v}" for k, v in sizes.items())]


def cell_config(
    spec: TableSpec, kernel: str, model: str, exact: bool, runs: Path, extra: list[str]
) -> ExperimentConfig:
    """The config of one cell: the kernel's config, the model and its sizes, the run dir,
    then ``extra`` overrides (``--steps``, ``--eval-batches``, positional ones)."""
    overrides = [
        *cell_overrides(model, exact),
        f"train.out_dir={run_dir(runs, spec.name, kernel, model)}",
        *extra,
    ]
    with warnings.catch_warnings():  # the file's options a model does not take are dropped
        warnings.filterwarnings("ignore", message=r"model\.name=.*ignoring")
        return load_config(spec.config_path(kernel, exact), overrides)


def settings(cfg: ExperimentConfig) -> dict:
    """The config keys a cell's numbers depend on: the test set only for the oracle, which is
    not trained; everything but where and how verbosely the run goes otherwise."""
    values = OmegaConf.to_container(OmegaConf.create(config_to_yaml(cfg)))
    if cfg.model["name"] == ORACLE:
        return {"data": values["data"], "eval": values["eval"]}
    for key in NEUTRAL_TRAIN_KEYS:
        values["train"].pop(key, None)
    for key in ("name", "description"):
        values.pop(key, None)
    return values


def stale_reason(cfg: ExperimentConfig, cell: Path) -> str | None:
    """Why the cached cell or the run directory of ``cfg`` does not belong to ``cfg`` (a
    different ``--steps``, protocol or size), or None when both match or do not exist yet."""
    want = settings(cfg)
    if cell.exists() and Cell.from_json(cell.read_text()).settings != want:
        return f"{cell} was computed with other settings; delete it or pass another --out"
    run_config = Path(cfg.train.out_dir) / "config.yaml"
    if cfg.model["name"] != ORACLE and run_config.exists():
        if settings(load_config(run_config)) != want:
            return f"{run_config.parent} was trained with other settings; delete it or pass --runs"
    return None


def model_description(model) -> str:
    """How evaluation scored the model: the estimator of a latent model, else exact."""
    estimator = getattr(model, "ll_estimator", None)
    if estimator is not None:
        return estimator
    if model.name == ORACLE:
        return "exact GP posterior under each task's generating hyper-parameters"
    return "exact: mean over targets of the Gaussian log-density"


def score(model, cfg: ExperimentConfig) -> tuple[Metrics, float]:
    """Metrics on the config's test set and the seconds they took. The oracle is not scored
    a second time beside itself."""
    start = time.perf_counter()
    metrics = evaluate(
        model,
        build_test_sampler(cfg),
        cfg.eval.n_batches,
        oracle=model.name != ORACLE,
        device=resolve_device(cfg.train.device),
        progress=cfg.train.progress,
    )
    return metrics, time.perf_counter() - start


def trained(cfg: ExperimentConfig):
    """The cell's model and its training seconds (None for the untrained oracle)."""
    if cfg.model["name"] == ORACLE:
        return build_model(ORACLE, cfg.model.get("dim_x", 1), 1), None
    return train_or_load(cfg)


def compute_cell(
    spec: TableSpec, kernel: str, cfg: ExperimentConfig, commit: str, exact: bool
) -> Cell:
    model, train_seconds = trained(cfg)
    metrics, eval_seconds = score(model, cfg)
    return Cell(
        table=spec.name,
        kernel=kernel,
        model=cfg.model["name"],
        protocol="exact" if exact else "budget",
        metrics=metrics,
        ll_estimator=model_description(model),
        parameters=sum(p.numel() for p in model.parameters()),
        model_options=cfg.model_options(),
        steps=0 if cfg.model["name"] == ORACLE else cfg.train.steps,
        batch_size=cfg.data.get("batch_size", 16),
        test_tasks=metrics.n_tasks,
        train_seconds=train_seconds,
        eval_seconds=eval_seconds,
        commit=commit,
        hardware=hardware(),
        settings=settings(cfg),
    )


def run_cell(
    spec: TableSpec, kernel: str, cfg: ExperimentConfig, out: Path, commit: str, exact: bool
) -> bool:
    """Train, score and cache the cell unless it is cached; prints one line. Returns whether
    it computed anything."""
    path = cell_path(out, spec.name, kernel, cfg.model["name"])
    cached = path.exists()
    if cached:
        cell = Cell.from_json(path.read_text())
    else:
        cell = compute_cell(spec, kernel, cfg, commit, exact)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cell.to_json())
    paper = spec.paper.get(cell.model, {}).get(kernel)
    print(
        f"[{spec.name} {kernel} {cell.model}] NLL {cell.nll:.3f} ± {cell.nll_se:.3f}"
        f" (paper {'—' if paper is None else f'{paper:.3f}'}), {cell.wall_seconds:.0f} s"
        f"{' (cached)' if cached else ''}",
        flush=True,
    )
    return not cached


# --- reading cells and building the table -----------------------------------------------


def load_cells(out: Path, spec: TableSpec) -> dict[tuple[str, str], Cell]:
    """Every cached cell of the table, keyed by (kernel, model)."""
    cells = {}
    for kernel, model in itertools.product(spec.kernels, spec.models):
        path = cell_path(out, spec.name, kernel, model)
        if path.exists():
            cells[kernel, model] = Cell.from_json(path.read_text())
    return cells


def missing_cells(spec: TableSpec, cells: dict) -> list[tuple[str, str]]:
    return [k for k in itertools.product(spec.kernels, spec.models) if k not in cells]


def model_label(model: str) -> str:
    return f"{model} †" if model in LATENT else model


def nll_text(cell: Cell | None, paper: float | None) -> str:
    ours = "—" if cell is None else f"{cell.nll:.3f} ± {cell.nll_se:.3f}"
    return ours if paper is None else f"{ours} ({paper:.3f})"


def nll_table(spec: TableSpec, cells: dict) -> str:
    """Models × kernels: our NLL ± s.e. with the paper's number in brackets."""
    head = "| model | " + " | ".join(KERNEL_LABELS[k] for k in spec.kernels) + " |"
    rows = [head, "| --- |" + " --- |" * len(spec.kernels)]
    for model in spec.models:
        texts = [
            nll_text(cells.get((k, model)), spec.paper.get(model, {}).get(k)) for k in spec.kernels
        ]
        rows.append(f"| {model_label(model)} | " + " | ".join(texts) + " |")
    return "\n".join(rows)


def gap_table(spec: TableSpec, cells: dict) -> str:
    """Models × kernels: NLL − oracle NLL on the same tasks, paired s.e."""
    head = "| model | " + " | ".join(KERNEL_LABELS[k] for k in spec.kernels) + " |"
    rows = [head, "| --- |" + " --- |" * len(spec.kernels)]
    for model in spec.models:
        if model == ORACLE:
            continue
        texts = []
        for kernel in spec.kernels:
            m = cells[kernel, model].metrics if (kernel, model) in cells else None
            ok = m is not None and m.gap is not None
            texts.append(f"{m.gap:.3f} ± {m.gap_se:.3f}" if ok else "—")
        rows.append(f"| {model_label(model)} | " + " | ".join(texts) + " |")
    return "\n".join(rows)


def sizes_table(spec: TableSpec, cells: dict) -> str:
    """Per model: the options it was trained with and its parameter count (from its cells)."""
    rows = ["| model | model options as trained | parameters |", "| --- | --- | ---: |"]
    for model in spec.models:
        ran = [c for (_, m), c in cells.items() if m == model]
        if not ran or model == ORACLE:
            rows.append(f"| {model} | {'not run' if not ran else '— (not trained)'} | — |")
            continue
        options = sorted({json.dumps(c.model_options, sort_keys=True) for c in ran})
        params = sorted({c.parameters for c in ran})
        rows.append(
            f"| {model} | {'; '.join(f'`{o}`' for o in options)} | "
            + ", ".join(f"{p:,}" for p in params)
            + " |"
        )
    return "\n".join(rows)


def steps_text(cell: Cell) -> str:
    return "— (not trained)" if cell.model == ORACLE else f"{cell.steps:,} × {cell.batch_size}"


def seconds_text(seconds: float | None) -> str:
    return "—" if seconds is None or math.isnan(seconds) else f"{seconds:.0f} s"


def cells_table(spec: TableSpec, cells: dict) -> str:
    """One row per finished cell: protocol, steps, test tasks, size, wall time, commit."""
    rows = [
        "| kernel | model | protocol | steps × batch | test tasks | parameters | train | eval "
        "| train + eval | commit |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for (kernel, model), c in sorted(cells.items(), key=lambda kv: _order(spec, kv[0])):
        rows.append(
            f"| {KERNEL_LABELS[kernel]} | {model} | {c.protocol} | {steps_text(c)} "
            f"| {c.test_tasks:,} | {c.parameters:,} | {seconds_text(c.train_seconds)} "
            f"| {seconds_text(c.eval_seconds)} | {seconds_text(c.wall_seconds)} | {c.commit} |"
        )
    return "\n".join(rows)


def _order(spec: TableSpec, key: tuple[str, str]) -> tuple[int, int]:
    return spec.kernels.index(key[0]), spec.models.index(key[1])


def estimator_notes(spec: TableSpec, cells: dict) -> str:
    """† lines: which LL estimator scored each latent model (from its cells)."""
    lines = []
    for model in spec.models:
        if model not in LATENT:
            continue
        used = sorted({c.ll_estimator for (_, m), c in cells.items() if m == model})
        lines.append(f"- † {model}: {'; '.join(used) if used else 'not run yet'}")
    return "\n".join(lines)


# --- does our ordering match the paper's? ------------------------------------------------


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation (Pearson correlation of the tie-averaged ranks)."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return cov / var if var > 0 else float("nan")


@dataclass
class Swap:
    """A pair the paper orders one way (``better`` has the lower NLL) and we the other."""

    better: str  # in the paper
    worse: str
    margin: float  # our NLL(better) - NLL(worse) > 0
    se: float  # s.e. of that difference (independent cells)

    @property
    def significant(self) -> bool:
        return self.margin > 2 * self.se


def ordering(spec: TableSpec, kernel: str, cells: dict) -> dict:
    """Spearman ρ between our NLLs and the paper's over the models with both, the pairs the
    paper orders (ties skipped) and the ones we order the other way."""
    models = [
        m
        for m in spec.models
        if (kernel, m) in cells and spec.paper.get(m, {}).get(kernel) is not None
    ]
    ours = {m: cells[kernel, m] for m in models}
    paper = {m: spec.paper[m][kernel] for m in models}
    swaps, n_pairs = [], 0
    for a, b in itertools.combinations(models, 2):
        if paper[a] == paper[b]:
            continue
        n_pairs += 1
        better, worse = (a, b) if paper[a] < paper[b] else (b, a)
        margin = ours[better].nll - ours[worse].nll
        if margin > 0:
            se = math.hypot(ours[better].nll_se, ours[worse].nll_se)
            swaps.append(Swap(better, worse, margin, se))
    rho = (
        spearman([ours[m].nll for m in models], [paper[m] for m in models])
        if len(models) > 1
        else float("nan")
    )
    return {"models": models, "spearman": rho, "pairs": n_pairs, "swaps": swaps}


def ordering_sentence(spec: TableSpec, kernel: str, cells: dict) -> str:
    """One sentence: is the paper's ordering of models reproduced for this kernel?"""
    o = ordering(spec, kernel, cells)
    label = KERNEL_LABELS[kernel]
    if len(o["models"]) < 2:
        return f"**{label}**: fewer than two models run, no ordering to compare."
    swaps = sorted(o["swaps"], key=lambda s: -s.margin / max(s.se, 1e-12))
    n_sig = sum(s.significant for s in swaps)
    if not swaps:
        verdict = "the paper's ordering is reproduced"
    elif n_sig == 0:
        verdict = "the paper's ordering is reproduced up to noise (no swap exceeds 2 s.e.)"
    else:
        verdict = f"the paper's ordering is NOT reproduced ({n_sig} swaps exceed 2 s.e.)"
    listed = "; ".join(
        f"{s.worse} beats {s.better} by {s.margin:.3f} ± {s.se:.3f}{' *' if s.significant else ''}"
        for s in swaps
    )
    return (
        f"**{label}**: Spearman ρ = {o['spearman']:.2f} between our NLLs and the paper's over "
        f"{len(o['models'])} models; {len(swaps)} of {o['pairs']} pairs the paper orders are "
        f"swapped, so {verdict}."
        + (f" Swapped (paper's better model second): {listed}." if swaps else "")
    )


# --- the results files --------------------------------------------------------------------


def distinct(values) -> str:
    return ", ".join(str(v) for v in sorted(set(values))) or "—"


def protocol_text(spec: TableSpec, cells: dict, exact: bool) -> str:
    trained = [c for (_, m), c in cells.items() if m != ORACLE]
    steps = distinct(f"{c.steps:,}" for c in trained)
    batch = distinct(c.batch_size for c in trained)
    tasks = distinct(f"{c.test_tasks:,}" for c in cells.values())
    cfg = load_config(spec.config_path(spec.kernels[0], exact))
    if exact:
        return (
            f"exact protocol ({steps} steps of batch {batch}, {tasks} test tasks, library "
            "default sizes = the published ones); one training seed (the paper: 5)"
        )
    return (
        f"budget: {steps} steps of batch {batch} (paper: 100,000 of {spec.paper_batch}); "
        f"{cfg.optim.name} lr {cfg.optim.lr} with {cfg.schedule.warmup_steps} warm-up steps and "
        f"{cfg.schedule.name} decay (paper: Yogi, cosine from 1e-3, no warm-up); one training "
        f"seed (paper: 5, whose ± is over seeds; ours is over test tasks); {tasks} test tasks "
        f"(paper: 5,000 batches of {spec.paper_batch}); model sizes shrunk to about 120–140k "
        "parameters each (table below; the paper used the published sizes)"
    )


def other_provenance(cells: dict, commit: str) -> str:
    """A note when cached cells came from other commits or machines than this run."""
    commits = {c.commit for c in cells.values()} - {commit}
    machines = {c.hardware for c in cells.values()} - {hardware()}
    notes = []
    if commits:
        notes.append(f"some cells were computed at other commits ({', '.join(sorted(commits))})")
    if machines:
        notes.append(f"some on other hardware ({'; '.join(sorted(machines))})")
    return (" " + "; ".join(notes).capitalize() + ".") if notes else ""


def missing_text(spec: TableSpec, cells: dict) -> str:
    missing = missing_cells(spec, cells)
    if not missing:
        return "All cells are run."
    by_model = {m: [KERNEL_LABELS[k] for k, mm in missing if mm == m] for m in spec.models}
    by_model = {m: ks for m, ks in by_model.items() if ks}
    everywhere = len(spec.kernels) > 1
    listed = "; ".join(
        f"{m} ({'all kernels' if everywhere and len(ks) == len(spec.kernels) else ', '.join(ks)})"
        for m, ks in by_model.items()
    )
    return (
        f"**Not run yet** ({len(missing)} of {len(spec.kernels) * len(spec.models)} cells, "
        f"shown as —): {listed}. Run the command again to fill them in."
    )


def report(spec: TableSpec, cells: dict, run: dict) -> str:
    """The table's README.md (the sections of shared/RESULTS.md, in its order)."""
    sentences = "\n\n".join(ordering_sentence(spec, k, cells) for k in spec.kernels)
    provenance = other_provenance(cells, run["commit"])
    plot = "\n![our NLL against the paper's](nll_vs_paper.png)\n" if run.get("plot") else ""
    return f"""# {spec.title}

**What**: PROTOCOLS {spec.title.split(":")[0]}: {spec.what}. Metric: NLL per target point
(NLL = −LL; lower is better), mean ± standard error over the test tasks; the paper's number
(mean over 5 seeds) in brackets. Every model of a column is scored on the same test tasks.

**Command**: `{run["command"]}`, commit `{run["commit"]}` (recorded at start).{provenance}

**Protocol or budget**: {protocol_text(spec, cells, run["exact"])}.

**Hardware and time**: {run["hardware"]}; wall time per cell (train + eval) in the last table.

{nll_table(spec, cells)}

{missing_text(spec, cells)}

† Latent-variable models predict a mixture over K samples, so their LL is an estimate:
{estimator_notes(spec, cells)}

The TNP-KR code scores NP/ANP with a single latent sample and BNP/BANP with the per-target
marginal over 4 bootstraps (the `kr-code` presets), so † rows are not the same estimator as the
paper's. The gp-oracle row is the exact GP posterior under each task's generating
hyper-parameters (not trained; no paper number).

## Reading

{sentences}

(* = the swap exceeds 2 standard errors of the difference.) {caveat(cells, run["exact"])}
{plot}
## Gap to the GP oracle (NLL − oracle NLL on the same tasks, paired s.e.)

{gap_table(spec, cells)}

## Model sizes

Budget sizes are set in one place, `BUDGET_SIZES` in `benchmarks/kr_tables.py`: each model
near 120–140k parameters, keeping its architecture's depth where the paper fixes it and
shrinking its width.

{sizes_table(spec, cells)}

## Cells

{cells_table(spec, cells)}
"""


def caveat(cells: dict, exact: bool) -> str:
    """What the ordering can and cannot say under this protocol."""
    if exact:
        return "Exact-protocol cells: the paper's ordering is the claim under test."
    steps = distinct(f"{c.steps:,}" for c in cells.values() if c.model != ORACLE)
    return (
        f"At this budget ({steps} steps) no model is near convergence, so the ordering says "
        "how far each model gets in a short run, not where it would end; swaps here do not "
        "contradict the paper unless they persist under the exact protocol."
    )


def results_json(spec: TableSpec, cells: dict, run: dict) -> str:
    orderings = {}
    for kernel in spec.kernels:
        o = ordering(spec, kernel, cells)
        rho = None if math.isnan(o["spearman"]) else o["spearman"]
        orderings[kernel] = {**o, "spearman": rho, "swaps": [asdict(s) for s in o["swaps"]]}
    return json.dumps(
        {
            "table": spec.name,
            **{k: v for k, v in run.items() if k != "plot"},
            "paper_nll": spec.paper,
            "budget_sizes": None if run["exact"] else {m: BUDGET_SIZES[m] for m in spec.models},
            "cells": [asdict(c) for c in cells.values()],
            "missing": [{"kernel": k, "model": m} for k, m in missing_cells(spec, cells)],
            "ordering": orderings,
        },
        indent=2,
    )


def plot(spec: TableSpec, cells: dict, path: Path) -> bool:
    """Our NLL against the paper's, one colour per kernel; False when nothing to plot."""
    points = [(k, m, spec.paper[m][k], c) for (k, m), c in cells.items() if m in spec.paper]
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for kernel in spec.kernels:
        mine = [p for p in points if p[0] == kernel]
        if not mine:
            continue
        ax.errorbar(
            [p[2] for p in mine],
            [p[3].nll for p in mine],
            [p[3].nll_se for p in mine],
            fmt="o",
            capsize=2,
            label=KERNEL_LABELS[kernel],
        )
        for _, model, x, c in mine:
            ax.annotate(model, (x, c.nll), fontsize=6, xytext=(3, 2), textcoords="offset points")
    lo = min(min(p[2], p[3].nll) for p in points)
    hi = max(max(p[2], p[3].nll) for p in points)
    ax.plot([lo, hi], [lo, hi], "k:", lw=1, label="ours = paper")
    ax.set_xlabel("paper NLL (lower is better)")
    ax.set_ylabel("our NLL ± s.e.")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_outputs(spec: TableSpec, out: Path, run: dict) -> None:
    """README.md, results.json and the plot of the table, from every cached cell."""
    cells = load_cells(out, spec)
    folder = out / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    run = {**run, "plot": plot(spec, cells, folder / "nll_vs_paper.png")}
    (folder / "results.json").write_text(results_json(spec, cells, run))
    (folder / "README.md").write_text(report(spec, cells, run))


# --- command line -------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(TABLES))
    parser.add_argument("--models", nargs="+", help="a subset of the tables' models")
    parser.add_argument("--kernels", nargs="+", choices=KR1_KERNELS, help="a subset of kernels")
    parser.add_argument("--exact", action="store_true", help="exact-protocol configs")
    parser.add_argument("--steps", type=int, help="override train.steps (smoke tests)")
    parser.add_argument("--eval-batches", type=int, help="override eval.n_batches (smoke tests)")
    parser.add_argument(
        "--out", help="tables go to OUT/kr1/, OUT/kr3/ (default results, or results/exact)"
    )
    parser.add_argument(
        "--runs", help="runs go to RUNS/<table>-<kernel>/<model> (default runs/kr-<protocol>)"
    )
    parser.add_argument("overrides", nargs="*", help="config overrides for every cell")
    args = parser.parse_args(argv)
    known = {m for t in args.tables for m in TABLES[t].models}
    unknown = sorted(set(args.models or []) - known)
    if unknown:
        parser.error(f"--models {unknown} are in none of the tables {args.tables}: {sorted(known)}")
    return args


def extra_overrides(args: argparse.Namespace) -> list[str]:
    steps = [f"train.steps={args.steps}"] if args.steps is not None else []
    batches = [f"eval.n_batches={args.eval_batches}"] if args.eval_batches is not None else []
    return [*steps, *batches, *args.overrides]


def planned_cells(spec: TableSpec, args: argparse.Namespace, runs: Path):
    """(kernel, config) of every cell this command asks for, in table order."""
    kernels = [k for k in spec.kernels if args.kernels is None or k in args.kernels]
    models = [m for m in spec.models if args.models is None or m in args.models]
    extra = extra_overrides(args)
    return [
        (kernel, cell_config(spec, kernel, model, args.exact, runs, extra))
        for kernel, model in itertools.product(kernels, models)
    ]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run = {
        "command": command_line(),
        "commit": git_commit(),  # the code that trains and scores, recorded before any work
        "hardware": hardware(),
        "exact": args.exact,
        "protocol": "exact" if args.exact else "budget",
    }
    # Budget and exact cells never share a folder, so a table is one protocol.
    out = Path(args.out or ("results/exact" if args.exact else "results"))
    runs = Path(args.runs or f"runs/kr-{run['protocol']}")
    plans = {name: planned_cells(TABLES[name], args, runs) for name in args.tables}
    # Refuse before any work, rather than mix cells or runs made with other settings.
    stale = [
        reason
        for name, plan in plans.items()
        for kernel, cfg in plan
        if (reason := stale_reason(cfg, cell_path(out, name, kernel, cfg.model["name"])))
    ]
    if stale:
        raise SystemExit("\n".join(stale))
    for name, plan in plans.items():
        spec = TABLES[name]
        for kernel, cfg in plan:
            if run_cell(spec, kernel, cfg, out, run["commit"], args.exact):
                write_outputs(spec, out, run)  # a stopped table is still a valid file
        write_outputs(spec, out, run)
        print(f"wrote {out / name / 'README.md'}", flush=True)


if __name__ == "__main__":
    main()
