"""The measurements of ``benchmarks/incremental.py``, one function per part; each returns a
JSON-able dict. Timings are medians of repeated calls in this process (one torch thread, set by
the caller); peak memory is the most tensor memory live at once during a call, counted op by
op (:class:`PeakTensorMemory`), so it is exact and free of the allocator's caching."""

from __future__ import annotations

import functools
import statistics
import time
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

import tnpx
from benchmarks.joint_samples import correlation_error, ll_gap, mean_se, oracle_for, rel_error
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluation import build_test_sampler
from tnpx.training import train_or_load

KR1 = "configs/kr1-rbf-tnpx-budget.yaml"
MODELS = ("tnp", "inc-tnp")


class PeakTensorMemory(TorchDispatchMode):
    """Counts the bytes of every tensor storage created inside the block while it is alive;
    ``peak`` is the most alive at once (bytes). Storages that existed before are not counted,
    nor the results of views and in-place ops (they alias an input's storage)."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, list[int]] = {}
        self.now = self.peak = 0

    def _release(self, key: int) -> None:
        entry = self.live[key]
        entry[1] -= 1
        if entry[1] == 0:
            del self.live[key]
            self.now -= entry[0]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if any(r.alias_info is not None for r in func._schema.returns):
            return out
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key in self.live:
                    self.live[key][1] += 1
                else:
                    self.live[key] = [storage.nbytes(), 1]
                    self.now += storage.nbytes()
                    self.peak = max(self.peak, self.now)
                weakref.finalize(t, self._release, key)
        return out


def timed(fn, repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` (after one untimed call), no grad."""
    with torch.no_grad():
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_mb(fn) -> float:
    """Peak tensor memory of one call of ``fn`` (MB), no grad."""
    with torch.no_grad(), PeakTensorMemory() as memory:
        fn()
    return memory.peak / 2**20


def kr1_config(model: str, runs: str, extra: list[str]):
    return load_config(
        KR1, [f"model.name={model}", f"train.out_dir={runs}/kr1-rbf-{model}", *extra]
    )


def budget_model(name: str, seed: int = 0):
    """``name`` at the KR-1 budget sizes, freshly initialised (timing does not read weights)."""
    torch.manual_seed(seed)
    options = load_config(KR1).model_options()
    return tnpx.build_model(name, 1, 1, **options).eval()


def toy_task(n_ctx: int, n_tgt: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    xc = torch.rand(1, n_ctx, 1, generator=g) * 4 - 2
    yc = torch.sin(3 * xc) + 0.1 * torch.randn(1, n_ctx, 1, generator=g)
    return xc, yc, torch.linspace(-2, 2, n_tgt).view(1, n_tgt, 1)


# -- part 1: the cost of adding a point --------------------------------------------------------
def update_cost(sizes: list[int], repeats: int) -> dict:
    """Per context size N: one point added by ``update`` to inc-tnp's cache of N points, in a
    stream (each update extends the newest cache, in place) and as the first update after an
    encoding (which copies the cache once into a store of twice its size), against
    re-encoding N + 1 points (inc-tnp's causal encoding, and tnp's)."""
    inc, tnp = budget_model("inc-tnp"), budget_model("tnp")
    rows = [update_row(inc, tnp, n, repeats) for n in sizes]
    return {"rows": rows, "repeats": repeats}


def update_row(inc, tnp, n: int, repeats: int) -> dict:
    xc, yc, _ = toy_task(n + 1, 1)
    x1, y1 = xc[:, n:], yc[:, n:]
    with torch.no_grad():
        encoded = inc.encode_context(xc[:, :n], yc[:, :n])
    stream = {"now": encoded}

    def step():
        stream["now"] = inc.update(stream["now"], x1, y1)

    slow = max(1, repeats // 4) if n >= 5000 else repeats
    row = {
        "n": n,
        "update_s": timed(step, repeats),
        "first_update_s": timed(lambda: inc.update(encoded, x1, y1), repeats),
        "reencode_s": timed(lambda: inc.encode_context(xc, yc), slow),
        "tnp_encode_s": timed(lambda: tnp.encode_context(xc, yc), slow),
        "update_mb": peak_mb(step),
        "reencode_mb": peak_mb(lambda: inc.encode_context(xc, yc)),
    }
    row["ratio"] = row["update_s"] / row["reencode_s"]
    ms = (row["update_s"] * 1e3, row["reencode_s"] * 1e3)
    print(f"[update] N={n}: {ms[0]:.2f} ms against {ms[1]:.1f} ms", flush=True)
    return row


# -- part 2: KR-1 RBF log-likelihood at the same budget ------------------------------------------
def per_task_ll(model, cfg, n_batches: int, perm_seed: int | None = None) -> torch.Tensor:
    """Per-task LL on the config's test batches; ``perm_seed`` permutes each task's context."""
    sampler = build_test_sampler(cfg)
    g = None if perm_seed is None else torch.Generator().manual_seed(perm_seed)
    out = []
    with torch.no_grad():
        for i in range(n_batches):
            b = batch_at(sampler, i, split="test")
            if g is not None:
                idx = torch.rand(b.xc.shape[:2], generator=g).argsort(1)
                b.xc, b.yc = reorder(b.xc, idx), reorder(b.yc, idx)
            out.append(model.log_likelihood(b).double())
    return torch.cat(out)


def reorder(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``t [b, n, f]`` with its points in the order ``idx [b, n]``."""
    return t.gather(1, idx[..., None].expand_as(t))


def order_spread(model, cfg, n_batches: int, n_orders: int) -> dict:
    """How far from permutation invariant: over ``n_orders`` random context orders, the std
    of each target's predictive mean relative to its predictive std, and of each task's LL."""
    sampler = build_test_sampler(cfg)
    rel, ll_sd, g = [], [], torch.Generator().manual_seed(1)
    with torch.no_grad():
        for i in range(n_batches):
            b = batch_at(sampler, i, split="test")
            means, stds, lls = [], [], []
            for _ in range(n_orders):
                idx = torch.rand(b.xc.shape[:2], generator=g).argsort(1)
                pred = model(reorder(b.xc, idx), reorder(b.yc, idx), b.xt)
                means.append(pred.mean)
                stds.append(pred.stddev)
                lls.append(pred.log_prob(b.yt).sum(-1).mean(-1))
            rel.append((torch.stack(means).std(0) / torch.stack(stds).mean(0)).mean((-1, -2)))
            ll_sd.append(torch.stack(lls).std(0))
    rel_t, ll_t = torch.cat(rel).double(), torch.cat(ll_sd).double()
    return {"mean_sd_over_pred_sd": mean_se(rel_t.tolist()), "ll_sd": mean_se(ll_t.tolist())}


def kr1_ll(runs: str, extra: list[str], n_orders: int) -> dict:
    """Trains (or loads) tnp and inc-tnp with the KR-1 RBF budget config and scores both on its
    test tasks: LL, the paired difference, the GP oracle's gap, inc-tnp's order spread."""
    result, lls = {}, {}
    for name in MODELS:
        cfg = kr1_config(name, runs, extra)
        model, seconds = train_or_load(cfg)
        start = time.perf_counter()
        lls[name] = per_task_ll(model, cfg, cfg.eval.n_batches)
        result[name] = {
            "ll": mean_se(lls[name].tolist()),
            "parameters": sum(p.numel() for p in model.parameters()),
            "train_seconds": seconds,
            "eval_seconds": time.perf_counter() - start,
            "steps": cfg.train.steps,
        }
        if not model.permutation_invariant:
            result[name]["order"] = order_spread(model, cfg, 8, n_orders)
            reversed_ll = per_task_ll(model, cfg, cfg.eval.n_batches, perm_seed=2)
            result[name]["ll_other_order"] = mean_se(reversed_ll.tolist())
        print(f"[kr1] {name}: LL {result[name]['ll'][0]:.3f} ± {result[name]['ll'][1]:.3f}")
    oracle = tnpx.build_model("gp-oracle")
    sampler = build_test_sampler(cfg)
    with torch.no_grad():
        o = torch.cat(
            [
                oracle.log_likelihood(batch_at(sampler, i, split="test")).double()
                for i in range(cfg.eval.n_batches)
            ]
        )
    result["gp-oracle"] = {"ll": mean_se(o.tolist())}
    for name in MODELS:
        result[name]["gap"] = mean_se((o - lls[name]).tolist())
    result["difference"] = mean_se((lls["inc-tnp"] - lls["tnp"]).tolist())
    result["tasks"] = len(o)
    return result


# -- part 3: joint sampling time and memory -------------------------------------------------------
SAMPLERS = {  # label: (model, method)
    "tnp rollout": ("tnp", "autoregressive"),
    "inc-tnp rollout": ("inc-tnp", "autoregressive"),
    "inc-tnp buffer": ("inc-tnp", "buffer"),
}


def sampling_cost(models: dict, n_ctx: int, n_paths: int, sweep: list[int], repeats: int):
    """Time and peak memory of ``tnpx.sample`` for ``n_paths`` paths of K targets (K in
    ``sweep``) given ``n_ctx`` context points, per sampler of :data:`SAMPLERS`. The samplers'
    calls are interleaved (one of each per round, ``repeats`` rounds after a warm-up round), so
    a slow spell of the machine hits all of them; the speed-up is the median over rounds of
    the rollout's time over the buffer's."""
    rows = []
    for k in sweep:
        xc, yc, xt = toy_task(n_ctx, k)
        runs = {
            label: functools.partial(
                tnpx.sample, models[name], xc, yc, xt, n_samples=n_paths, method=method, seed=0
            )
            for label, (name, method) in SAMPLERS.items()
        }
        times = {label: [] for label in runs}
        with torch.no_grad():
            for round_ in range(repeats + 1):
                for label, run in runs.items():
                    start = time.perf_counter()
                    run()
                    if round_:
                        times[label].append(time.perf_counter() - start)
        ratios = [a / b for a, b in zip(times["tnp rollout"], times["inc-tnp buffer"])]
        for label, run in runs.items():
            row = {"k": k, "sampler": label, "seconds": statistics.median(times[label])}
            row["peak_mb"] = peak_mb(run)
            if label == "inc-tnp buffer":
                row["speedup_over_tnp_rollout"] = statistics.median(ratios)
            print(f"[sampling] K={k} {label}: {row['seconds']:.3f} s, {row['peak_mb']:.2f} MB")
            rows.append(row)
    return {"rows": rows, "n_ctx": n_ctx, "n_paths": n_paths, "repeats": repeats}


# -- part 4: covariance against the GP posterior ------------------------------------------------
def covariance(models: dict, runs: str, extra, n_tasks: int, n_targets: int, n_samples: int):
    """``benchmarks/joint_samples.py``'s metrics on KR-1 RBF test tasks (3–30 context points)
    for each sampler, the Monte Carlo floor (exact posterior samples), and the joint LL per
    target of a posterior draw under the buffer's and the rollout's factorisations."""
    tasks = ["data.min_ctx=3", "data.max_ctx=30", "eval.batch_size=1"]
    sampler = build_test_sampler(kr1_config("inc-tnp", runs, [*extra, *tasks]))
    keys = [*SAMPLERS, "exact samples"]
    errors = {k: {"corr": [], "cov": []} for k in keys}
    joint = {"inc-tnp buffer": [], "inc-tnp rollout": [], "tnp rollout": [], "gp-oracle": []}
    gaps = {name: [] for name in models}
    seconds = dict.fromkeys(SAMPLERS, 0.0)
    for i in range(n_tasks):
        b = batch_at(sampler, i, split="test")
        g = torch.Generator().manual_seed(i)
        lo, hi = b.xc.min().item(), b.xc.max().item()
        centre = lo + (hi - lo) * torch.rand(1, generator=g).item()
        ell = float(b.info["lengthscale"][0])
        xt = torch.linspace(centre - ell, centre + ell, n_targets).view(1, -1, 1)
        oracle = oracle_for(b.info)
        xc64, yc64, xt64 = b.xc.double(), b.yc.double(), xt.double()
        truth = oracle.posterior_covariance(xc64, yc64, xt64)[0]
        mean = oracle(xc64, yc64, xt64).mean[0, :, 0]
        gauss = torch.distributions.MultivariateNormal(mean, truth + 1e-9 * torch.eye(n_targets))
        draws = {"exact samples": gauss.sample((n_samples,))}
        for label, (name, method) in SAMPLERS.items():
            start = time.perf_counter()
            s = tnpx.sample(
                models[name], b.xc, b.yc, xt, n_samples=n_samples, method=method, seed=i
            )
            seconds[label] += time.perf_counter() - start
            draws[label] = s[:, 0, :, 0].double()
        for label, s in draws.items():
            errors[label]["corr"].append(correlation_error(torch.cov(s.T), truth))
            errors[label]["cov"].append(rel_error(torch.cov(s.T), truth))
        for name, model in models.items():
            gaps[name].append(ll_gap(model, oracle, b, torch.float32))
        y = gauss.sample((1,)).view(1, n_targets, 1)
        joint["gp-oracle"].append(gauss.log_prob(y.view(-1)).item() / n_targets)
        with torch.no_grad():
            inc = models["inc-tnp"].joint_log_prob(b.xc, b.yc, xt, y.float())
            joint["inc-tnp buffer"].append(inc.item() / n_targets)
            for label in ("inc-tnp rollout", "tnp rollout"):
                joint[label].append(rollout_log_prob(models[label.split()[0]], b.xc, b.yc, xt, y))
    return {
        "errors": {k: {m: mean_se(v) for m, v in e.items()} for k, e in errors.items()},
        "joint_ll": {k: mean_se(v) for k, v in joint.items()},
        "ll_gap": {k: mean_se(v) for k, v in gaps.items()},
        "seconds_per_task": {k: v / n_tasks for k, v in seconds.items()},
        "tasks": n_tasks,
        "n_targets": n_targets,
        "n_samples": n_samples,
    }


def rollout_log_prob(model, xc, yc, xt, yt) -> float:
    """Per-target joint log-density of ``yt`` in the order of ``xt`` under the rollout's
    factorisation (each target predicted from the context plus the targets before it)."""
    total, n = 0.0, xt.shape[1]
    for k in range(n):
        x_ctx, y_ctx = torch.cat([xc, xt[:, :k]], 1), torch.cat([yc, yt[:, :k].float()], 1)
        pred = model(x_ctx, y_ctx, xt[:, k : k + 1])
        total += pred.log_prob(yt[:, k : k + 1].float()).sum().item()
    return total / n
