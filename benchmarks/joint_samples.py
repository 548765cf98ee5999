"""Joint samples against the GP posterior: does the autoregressive rollout (``tnpx.sample``)
of a trained model recover the true posterior covariance, which per-target marginals miss?

For held-out tasks of a GP prior (``--prior``: a config; default the pretrained models'), and
models shipped (``--models``) or trained (``--checkpoint NAME=PATH``): the GP oracle's
posterior covariance of ``y`` (with the task's noise) at ``--n-targets`` points spanning two
lengthscales around a random point of the context range (close enough that the posterior
correlates them); the empirical covariance of ``--n-samples`` rollout samples from each model;
the diagonal covariance of the model's independent marginals; and the oracle's own rollout as
the Monte Carlo floor. Metrics (lower is better, mean ± s.e. over tasks): the correlation error
``||R - R_GP||_F / ||R_GP - I||_F`` (how much of the posterior's correlation structure is
missed: independent marginals score exactly 1) and the relative covariance error ``||C -
C_GP||_F / ||C_GP||_F`` (scale included), beside each model's marginal LL gap to the oracle
(how well trained it is). Writes ``README.md``, ``results.json``, ``covariance.png`` under
``--out``.

    python -m benchmarks.joint_samples                   # the shipped models
    python -m benchmarks.joint_samples --prior configs/samples-gp1d-rbf.yaml \
        --checkpoint gp1d-rbf-tnp=runs/samples-gp1d-rbf/model.pt --out results/samples/rbf
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

import tnpx
from tnpx.config import load_config
from tnpx.data import batch_at, build_sampler
from tnpx.gp import KERNELS
from tnpx.provenance import command_line, git_commit, hardware

MODELS = ["gp1d-tnp", "gp1d-te-tnp"]
PRIOR = "configs/pretrained-gp1d-tnp.yaml"


def oracle_for(info: dict):
    """The exact GP of the task that generated ``info`` (a batch of one task), in float64."""
    return tnpx.build_model(
        "gp-oracle",
        kernel=KERNELS[int(info["kernel"][0])],
        lengthscale=float(info["lengthscale"][0]),
        period=float(info["period"][0]),
        variance=float(info["variance"][0]),
        noise_ctx=float(info["noise_ctx"][0]),
        noise_tgt=float(info["noise_tgt"][0]),
    ).double()


def load_models(names: list[str], checkpoints: list[str]) -> dict:
    """Shipped models by name and ``NAME=PATH`` checkpoints, by display name."""
    models = {name: tnpx.pretrained(name) for name in names}
    for spec in checkpoints:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--checkpoint takes NAME=PATH, got {spec!r}")
        if not Path(path).exists():
            raise SystemExit(f"--checkpoint {name}: {path} not found (train it first)")
        models[name] = tnpx.load(path)
    return models


def ll_gap(model, oracle, b, dtype: torch.dtype) -> float:
    """Oracle minus ``model`` mean per-target log-likelihood on batch ``b``'s targets
    (``dtype``: the model's)."""
    with torch.no_grad():
        xc, yc, xt, yt = (v.to(dtype) for v in (b.xc, b.yc, b.xt, b.yt))
        ll = model(xc, yc, xt).log_prob(yt).mean()
        ll_oracle = oracle(b.xc.double(), b.yc.double(), b.xt.double()).log_prob(b.yt.double())
    return (ll_oracle.mean() - ll.double()).item()


def rel_error(c: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius error of covariance ``c`` against ``ref`` (both ``[n, n]``)."""
    return ((c - ref).norm() / ref.norm()).item()


def correlation(c: torch.Tensor) -> torch.Tensor:
    sd = c.diagonal().clamp_min(1e-300).sqrt()
    return c / sd[:, None] / sd[None, :]


def correlation_error(c: torch.Tensor, ref: torch.Tensor) -> float:
    """``||R - R_ref||_F / ||R_ref - I||_F`` for the correlation matrices of ``c`` and
    ``ref``: 0 when the correlations match, 1 for a diagonal ``c`` (no correlation)."""
    r, r_ref = correlation(c), correlation(ref)
    eye = torch.eye(len(ref), dtype=ref.dtype)
    return ((r - r_ref).norm() / (r_ref - eye).norm()).item()


def mean_se(v: list[float]) -> tuple[float, float]:
    t = torch.tensor(v, dtype=torch.float64)
    return t.mean().item(), (t.std() / math.sqrt(len(t))).item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="*",
        help=f"shipped models (default {' '.join(MODELS)} without --checkpoint)",
    )
    parser.add_argument(
        "--checkpoint", action="append", default=[], metavar="NAME=PATH", help="a trained model"
    )
    parser.add_argument(
        "--prior", default=PRIOR, help="config whose GP prior the tasks are drawn from"
    )
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--n-targets", type=int, default=12)
    parser.add_argument("--n-samples", type=int, default=1000)
    parser.add_argument("--min-ctx", type=int, default=3)
    parser.add_argument("--max-ctx", type=int, default=30)
    parser.add_argument("--out", default="results/samples")
    args = parser.parse_args()
    commit, command = git_commit(), command_line()
    cfg = load_config(args.prior)
    options = {**cfg.data_options(), "min_ctx": args.min_ctx, "max_ctx": args.max_ctx}
    sampler = build_sampler("gp", batch_size=1, seed=cfg.eval.seed, **options)
    names = args.models if args.models is not None else ([] if args.checkpoint else MODELS)
    models = load_models(names, args.checkpoint)
    kinds = ("rollout", "marginals", "rollout_corr", "marginals_corr", "ll_gap")
    errors = {name: {k: [] for k in kinds} for name in [*models, "gp-oracle"]}
    seconds = {name: 0.0 for name in errors}
    example = None
    for i in range(args.tasks):
        b = batch_at(sampler, i, split="test")
        # targets within one lengthscale either side of a random point of the context range
        g = torch.Generator().manual_seed(i)
        lo, hi = b.xc.min().item(), b.xc.max().item()
        centre = lo + (hi - lo) * torch.rand(1, generator=g).item()
        ell = float(b.info["lengthscale"][0])
        xt = torch.linspace(centre - ell, centre + ell, args.n_targets).view(1, -1, 1)
        oracle = oracle_for(b.info)
        truth = oracle.posterior_covariance(b.xc.double(), b.yc.double(), xt.double())[0]
        for name, model in {**models, "gp-oracle": oracle}.items():
            x_in = (
                (b.xc.double(), b.yc.double(), xt.double())
                if name == "gp-oracle"
                else (b.xc, b.yc, xt)
            )
            start = time.perf_counter()
            s = tnpx.sample(model, *x_in, n_samples=args.n_samples, seed=i)[:, 0, :, 0].double()
            seconds[name] += time.perf_counter() - start
            empirical = torch.cov(s.T)
            with torch.no_grad():
                marginal = torch.diag(model(*x_in).variance[0, :, 0].double())
            errors[name]["rollout"].append(rel_error(empirical, truth))
            errors[name]["marginals"].append(rel_error(marginal, truth))
            errors[name]["rollout_corr"].append(correlation_error(empirical, truth))
            errors[name]["marginals_corr"].append(correlation_error(marginal, truth))
            # how well trained: the oracle's LL minus the model's on the task's own targets
            errors[name]["ll_gap"].append(ll_gap(model, oracle, b, x_in[0].dtype))
            if i == 0:
                example = example or {"truth": truth}
                example[name] = (empirical, marginal)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [
        "| model | correlation error: rollout | correlation error: marginals | covariance "
        "error: rollout | covariance error: marginals | marginal LL gap to the oracle "
        "| rollout time per task |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    summary = {}
    for name, e in errors.items():
        stats = {k: mean_se(e[k]) for k in kinds}
        summary[name] = {**stats, "seconds_per_task": seconds[name] / args.tasks}
        cells = " | ".join(
            f"{stats[k][0]:.3f} ± {stats[k][1]:.3f}"
            for k in ("rollout_corr", "marginals_corr", "rollout", "marginals", "ll_gap")
        )
        rows.append(f"| {name} | {cells} | {seconds[name] / args.tasks:.1f} s |")
    plot_example(example, out / "covariance.png")
    reading = " ".join(read(name, summary) for name in models)
    sources = ", ".join(
        [f"`{n}` (shipped, see `results/pretrained/`)" for n in names]
        + [f"`{n}` (`{path}`)" for n, _, path in (c.partition("=") for c in args.checkpoint)]
    )
    floor = summary["gp-oracle"]["rollout_corr"][0]
    text = f"""# Joint samples against the GP posterior covariance

**What**: for {args.tasks} held-out tasks of the GP prior of `{args.prior}` ({cfg.description};
{args.min_ctx}–{args.max_ctx} context points),
{args.n_targets} targets spanning one lengthscale either side of a random point of the context
range, a covariance of y at the targets against the exact GP posterior covariance C_GP (the
task's true kernel, hyper-parameters and noise). "Rollout": the empirical covariance of
{args.n_samples} autoregressive samples (`tnpx.sample`, random order); "marginals": the
diagonal covariance that independent per-target predictions imply. Correlation error
`||R − R_GP||_F / ||R_GP − I||_F` (R the correlation matrices; the share of the posterior's
correlation structure that is missed: marginals score 1 by construction); covariance error
`||C − C_GP||_F / ||C_GP||_F` (scale included). The oracle's own rollout row is the Monte Carlo
floor. Lower is better; mean ± s.e. over tasks. How well trained each model is: its marginal
LL gap to the oracle (oracle LL − model LL per target, on each task's own targets).

**Command**: `{command}`, commit `{commit}` (recorded at start).

**Protocol or budget**: budget (no paper number: the issue asks that a well-trained model's
samples approach the oracle's posterior covariance). Models: {sources}.

**Hardware and time**: {hardware()}; rollout time per task below.

{chr(10).join(rows)}

`covariance.png`: task 0's covariance matrices (GP posterior, each model's rollout, each
model's marginals).

**Reading**: {reading} The Monte Carlo floor of the correlation error (the exact GP's own
rollout with the same number of samples) is {floor:.3f}.
"""
    (out / "README.md").write_text(text)
    (out / "results.json").write_text(json.dumps(summary, indent=1))
    print(text)


def read(name: str, summary: dict) -> str:
    """One sentence, from the numbers, on whether ``name``'s rollout beats its marginals."""
    (rc, rc_se), (c, c_se) = summary[name]["rollout_corr"], summary[name]["rollout"]
    m = summary[name]["marginals"][0]
    recovered = 1 - rc
    verdict = (
        f"recovers {recovered:.0%} of the posterior's correlation structure (correlation error "
        f"{rc:.3f} ± {rc_se:.3f}, against 1 for independent marginals)"
        if rc < 1 - 2 * rc_se
        else f"does not recover the posterior's correlations (correlation error {rc:.3f} ± "
        f"{rc_se:.3f}, independent marginals score 1)"
    )
    scale = "better" if c < m else "worse"
    return (
        f"`{name}`'s rollout {verdict}; with the scale included its covariance error is "
        f"{c:.3f} ± {c_se:.3f}, {scale} than its marginals' {m:.3f}."
    )


def plot_example(example: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tnpx.plot import save_figure

    panels = [("GP posterior", example["truth"])]
    for name, pair in example.items():
        if name in ("truth", "gp-oracle"):
            continue
        emp, marg = pair
        panels += [(f"{name} rollout", emp), (f"{name} marginals", marg)]
    vmax = example["truth"].abs().max().item()
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
    for ax, (title, c) in zip(axes, panels):
        ax.imshow(c.numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    save_figure(fig, path)


if __name__ == "__main__":
    main()
