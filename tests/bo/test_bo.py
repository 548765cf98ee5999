"""Bayesian optimisation through BoTorch (tnpx.bo): the surrogate adapter, acquisitions, the
KR-2 loop, suggestions, the benchmark runner and its command line."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch.distributions import Normal

import tnpx
from tnpx.bo import (
    ACQUISITIONS,
    BOTask,
    JitteredExpectedImprovement,
    NeuralSurrogate,
    NPSurrogate,
    OracleGP,
    RandomSearch,
    make_acquisition,
    run_bo,
    suggest,
)
from tnpx.cli import main


def tiny_tnp():
    torch.manual_seed(0)
    return tnpx.build_model("tnp", dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16)


def oracle(lengthscale=0.5):
    return tnpx.build_model(
        "gp-oracle", kernel="rbf", lengthscale=lengthscale, noise_ctx=0.05, noise_tgt=0.0
    ).double()


def observations(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 1, generator=g, dtype=torch.float64) * 4 - 2
    return X, torch.sin(2 * X)


def test_posterior_shapes_for_batched_q_inputs():
    X, Y = observations()
    surrogate = NPSurrogate(tiny_tnp(), X.float(), Y.float())
    post = surrogate.posterior(torch.rand(2, 3, 4, 1))
    assert post.mean.shape == (2, 3, 4, 1) and post.variance.shape == (2, 3, 4, 1)
    assert surrogate.num_outputs == 1
    assert (post.variance > 0).all()


def test_q_batches_share_one_context_pass_with_the_same_result():
    """The adapter puts all q-batches in one task (targets are independent given the context);
    each q-batch must get what the model gives it alone."""
    X, Y = observations()
    net = tiny_tnp()
    query = torch.rand(3, 2, 1)
    post = NPSurrogate(net, X.float(), Y.float()).posterior(query)
    for i in range(3):
        alone = net(X.float()[None], Y.float()[None], query[i : i + 1])
        torch.testing.assert_close(post.mean[i], alone.mean[0])
        torch.testing.assert_close(post.variance[i], alone.variance[0])


def test_posterior_is_the_models_prediction():
    X, Y = observations()
    net = oracle()
    xt = torch.linspace(-2, 2, 7, dtype=torch.float64)[:, None]
    post = NPSurrogate(net, X, Y).posterior(xt[:, None, :])  # 7 q-batches of one point
    pred = net(X[None], Y[None], xt[None])
    torch.testing.assert_close(post.mean[:, 0, 0], pred.mean[0, :, 0])
    torch.testing.assert_close(post.variance[:, 0, 0], pred.variance[0, :, 0])


def test_gradients_reach_the_inputs():
    X, Y = observations()
    surrogate = NPSurrogate(tiny_tnp(), X.float(), Y.float())
    x = torch.zeros(1, 1, 1, requires_grad=True)
    make_acquisition("logei", surrogate, Y.min().item())(x).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_acquisition_does_not_cast_the_users_model():
    X, Y = observations()
    net = tiny_tnp()
    acq = make_acquisition("kr-ei", NPSurrogate(net, X.float(), Y.float()), Y.min().item())
    acq(torch.rand(5, 1, 1, dtype=torch.float64))  # BoTorch moves the acquisition to float64
    assert next(net.parameters()).dtype == torch.float32


def test_jittered_ei_is_the_kr_formula_and_close_to_botorch_ei():
    X, Y = observations()
    surrogate = NPSurrogate(oracle(), X, Y)
    xs = torch.linspace(-2, 2, 11, dtype=torch.float64)[:, None, None]
    best = Y.min().item()
    ours = JitteredExpectedImprovement(surrogate, best)(xs)
    post = surrogate.posterior(xs)
    mu, sd = post.mean[:, 0, 0], post.variance[:, 0, 0].sqrt()
    z = (best - mu) / (sd + 1e-5)
    unit = Normal(0.0, 1.0)
    expected = (best - mu) * unit.cdf(z) + sd * unit.log_prob(z).exp()
    torch.testing.assert_close(ours, expected)
    botorch_ei = make_acquisition("ei", surrogate, best)(xs)
    torch.testing.assert_close(ours, botorch_ei, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name", ACQUISITIONS)
def test_every_acquisition_runs(name):
    X, Y = observations()
    acq = make_acquisition(name, NPSurrogate(oracle(), X, Y), Y.min().item())
    values = acq(torch.linspace(-2, 2, 5, dtype=torch.float64)[:, None, None])
    assert values.shape == (5,) and torch.isfinite(values).all()


def test_unknown_acquisition_lists_the_valid_ones():
    with pytest.raises(ValueError, match="logei"):
        make_acquisition("thompson", NPSurrogate(oracle(), *observations()), 0.0)


def test_input_map_and_standardisation_make_units_irrelevant():
    """The same problem in other units (x -> 10 + 2.5 (x + 2), y -> 100 + 7 y) gives the same
    posterior, in those units."""
    X, Y = observations()
    net = oracle()
    xt = torch.linspace(-2, 2, 5, dtype=torch.float64)[:, None, None]
    bounds = torch.tensor([[-2.0], [2.0]], dtype=torch.float64)
    plain = NPSurrogate(net, X, Y, bounds=bounds, domain=(-2, 2), standardize=True)
    to_user = lambda x: 10 + 2.5 * (x + 2)  # noqa: E731
    moved = NPSurrogate(
        net, to_user(X), 100 + 7 * Y, bounds=to_user(bounds), domain=(-2, 2), standardize=True
    )
    a, b = plain.posterior(xt), moved.posterior(to_user(xt))
    torch.testing.assert_close(100 + 7 * a.mean, b.mean)
    torch.testing.assert_close(49 * a.variance, b.variance)


def test_bad_observations_fail_clearly():
    with pytest.raises(ValueError, match="train_X"):
        NPSurrogate(tiny_tnp(), torch.rand(4, 2), torch.rand(4, 1))
    with pytest.raises(ValueError, match="train_Y"):
        NPSurrogate(tiny_tnp(), torch.rand(4, 1), torch.rand(3, 1))
    with pytest.raises(TypeError, match="NeuralProcess"):
        NPSurrogate(torch.nn.Linear(1, 1), torch.rand(4, 1), torch.rand(4, 1))


# -- the loop ------------------------------------------------------------------------------------
def gp_task(seed: int) -> BOTask:
    from tnpx.data import batch_at, build_sampler

    sampler = build_sampler("gp", batch_size=1, seed=seed, min_ctx=0, max_ctx=0)
    b = batch_at(sampler, 0, split="test")
    hyper = {k: float(v[0]) for k, v in b.info.items() if k != "kernel"}
    hyper["kernel"] = "rbf"
    return BOTask(b.xt[0].double(), b.yt[0, :, 0].double(), hyper)


def test_run_records_a_non_increasing_regret_and_is_reproducible():
    task = gp_task(0)
    a = run_bo(RandomSearch(), task, n_init=3, n_iter=10, seed=4)
    b = run_bo(RandomSearch(), task, n_init=3, n_iter=10, seed=4)
    assert a.regret == b.regret and a.chosen == b.chosen
    assert len(a.regret) == 11 and len(a.seconds) == 10 and len(a.chosen) == 13
    assert all(x >= y for x, y in zip(a.regret, a.regret[1:]))
    assert min(a.regret) >= 0
    # regret is measured against the task's true minimum
    assert a.regret[-1] == pytest.approx(task.f[a.chosen].min().item() - task.f.min().item())


def test_oracle_beats_random_search():
    oracle_final, random_final = [], []
    for seed in range(6):
        task = gp_task(seed)
        oracle_final.append(run_bo(OracleGP(), task, n_init=3, n_iter=12, seed=seed).regret[-1])
        random_final.append(run_bo(RandomSearch(), task, n_init=3, n_iter=12, seed=seed).regret[-1])
    assert sum(oracle_final) < 0.5 * sum(random_final)


def test_neural_surrogate_and_continuous_optimiser_run():
    task = gp_task(1)
    run = run_bo(
        NeuralSurrogate(tiny_tnp()),
        task,
        n_init=3,
        n_iter=2,
        optimizer="continuous",
        bounds=torch.tensor([[-2.0], [2.0]]),
    )
    assert len(run.regret) == 3
    with pytest.raises(ValueError, match="bounds"):
        run_bo(RandomSearch(), task, optimizer="continuous")
    with pytest.raises(ValueError, match="n_init"):
        run_bo(RandomSearch(), task, n_init=0)


# -- suggest -------------------------------------------------------------------------------------
def test_suggest_finds_the_valley_in_the_users_units():
    X = torch.tensor([[0.0], [1.0], [2.0], [4.0], [5.0], [6.0]], dtype=torch.float64)
    Y = (X - 3.2) ** 2 + 50
    net = tnpx.build_model("gp-oracle", kernel="rbf", lengthscale=1.0, noise_ctx=0.01)
    point = suggest(net, X, Y, torch.tensor([[0.0], [6.0]]), domain=(-2, 2))
    assert point.shape == (1, 1)
    assert 2.0 < point.item() < 4.5
    two = suggest(net, X, Y, torch.tensor([[0.0], [6.0]]), "qlogei", q=2, domain=(-2, 2))
    assert two.shape == (2, 1) and ((two >= 0) & (two <= 6)).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bounds": torch.tensor([[1.0], [0.0]])}, "bounds"),
        ({"q": 2}, "q\\*"),
        ({"q": 0}, "q must"),
    ],
)
def test_suggest_rejects_bad_arguments(kwargs, message):
    X, Y = observations()
    args = {"bounds": torch.tensor([[-2.0], [2.0]]), **kwargs}
    with pytest.raises(ValueError, match=message):
        suggest(oracle(), X, Y, domain=(-2, 2), **args)


def test_cli_suggest(tmp_path, capsys):
    ckpt = tmp_path / "m.pt"
    tnpx.save(tiny_tnp(), ckpt)
    obs = tmp_path / "obs.csv"
    obs.write_text("temp,yield\n10,3.1\n20,2.5\n30,2.9\n40,3.5\n")
    args = ["bo", "suggest", str(ckpt), "--observations", str(obs), "--bounds", "10", "40"]
    assert main(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "temp" and 10 <= float(lines[1]) <= 40
    assert main([*args[:-3], "--bounds", "10"]) == 2
    assert "LOW HIGH" in capsys.readouterr().err


# -- the benchmark runner ------------------------------------------------------------------------
BENCH = """
name: tiny-bo
description: test
protocol: budget
notes: tiny
bo:
  tasks_from: data-{kernel}.yaml
  kernels: [rbf]
  n_tasks: 2
  n_seeds: 2
  n_init: 2
  n_iter: 3
models:
  tiny: MODEL
baselines: [gp-oracle, random]
paper:
  tiny: {rbf: 0.5}
"""
DATA = "data: {name: gp, kernels: [rbf], n_random: 10, n_grid: 10, min_ctx: 1, max_ctx: 5}\n"


def tiny_benchmark(tmp_path):
    """A two-task benchmark of ``tiny_tnp`` saved at ``tmp_path / "tiny.pt"``: (the loaded
    benchmark, the checkpoint's path, the config's path)."""
    from experiments.bo.benchmark import load_benchmark

    ckpt = tmp_path / "tiny.pt"
    tnpx.save(tiny_tnp(), ckpt)
    (tmp_path / "data-rbf.yaml").write_text(DATA)
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(BENCH.replace("MODEL", str(ckpt)))
    return load_benchmark(cfg, tmp_path / "out"), ckpt, cfg


@pytest.mark.slow
def test_benchmark_writes_the_table_and_resumes(tmp_path):
    from experiments.bo.benchmark import load_benchmark
    from experiments.bo.run import run_benchmark

    bench, ckpt, cfg = tiny_benchmark(tmp_path)
    cells = run_benchmark(bench, progress=False)
    assert set(cells) == {("rbf", "tiny"), ("rbf", "gp-oracle"), ("rbf", "random")}
    assert len(cells[("rbf", "tiny")]["regret"]) == 4  # 2 tasks x 2 seeds
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "(0.500)" in readme and "gp-oracle" in readme and "**Command**" in readme
    assert (tmp_path / "out" / "regret.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((tmp_path / "out" / "results.json").read_text())
    assert math.isfinite(summary["rbf/tiny"]["final_regret"])
    cell = tmp_path / "out" / "cells" / "rbf" / "tiny.json"
    stamp = cell.stat().st_mtime_ns
    run_benchmark(bench, progress=False)  # nothing left to do
    assert cell.stat().st_mtime_ns == stamp
    cfg.write_text(BENCH.replace("MODEL", str(ckpt)).replace("n_iter: 3", "n_iter: 4"))
    run_benchmark(load_benchmark(cfg, tmp_path / "out"), only_models=["tiny"], progress=False)
    assert len(json.loads(cell.read_text())["regret"][0]) == 5  # settings changed: re-run


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_a_cell_of_a_retrained_surrogate_is_re_run(tmp_path):
    """A saved cell records its checkpoint's digest: when the checkpoint at that path is
    another model (retrained), the cell is stale; a cell from before digests is kept."""
    from experiments.bo.benchmark import checkpoint_digest, load_cells
    from experiments.bo.run import run_benchmark

    bench, ckpt, _ = tiny_benchmark(tmp_path)
    run_benchmark(bench, only_models=["tiny", "random"], progress=False)
    cell, other = (tmp_path / "out" / "cells" / "rbf" / f"{n}.json" for n in ("tiny", "random"))
    assert json.loads(cell.read_text())["checkpoint_sha256"] == checkpoint_digest(ckpt)
    stamps = cell.stat().st_mtime_ns, other.stat().st_mtime_ns
    torch.manual_seed(1)
    retrained = tnpx.build_model("tnp", dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16)
    tnpx.save(retrained, ckpt)
    assert ("rbf", "tiny") not in load_cells(bench)
    run_benchmark(bench, only_models=["tiny", "random"], progress=False)
    assert cell.stat().st_mtime_ns != stamps[0] and other.stat().st_mtime_ns == stamps[1]
    assert json.loads(cell.read_text())["checkpoint_sha256"] == checkpoint_digest(ckpt)
    older = {k: v for k, v in json.loads(cell.read_text()).items() if k != "checkpoint_sha256"}
    cell.write_text(json.dumps(older))  # saved before cells recorded digests: cannot tell
    tnpx.save(tiny_tnp(), ckpt)
    assert ("rbf", "tiny") in load_cells(bench)


def test_benchmark_config_errors_name_the_valid_keys(tmp_path):
    from experiments.bo.benchmark import load_benchmark

    cfg = tmp_path / "bad.yaml"
    cfg.write_text("bo: {n_taks: 3}\n")
    with pytest.raises(ValueError, match="n_tasks"):
        load_benchmark(cfg)
    cfg.write_text("baselines: [gp-magic]\n")
    with pytest.raises(ValueError, match="gp-fitted"):
        load_benchmark(cfg)


def test_shipped_bo_configs_load():
    from experiments.bo.benchmark import load_benchmark
    from experiments.bo.run import bo_tasks

    for name in ("kr2", "kr2-budget", "kr2-rbf-long-runs", "tnpd-bo-budget"):
        bench = load_benchmark(f"configs/{name}.yaml")
        assert bench.settings.kernels
    tnpd = load_benchmark("configs/tnpd-bo-budget.yaml")
    tnpd.settings.n_tasks = 1
    (task,) = bo_tasks(tnpd, "rbf")
    assert task.x.shape == (1000, 1) and task.hyper["kernel"] == "rbf"


def test_fitted_gp_warm_start_keeps_hyperparameters_not_data_statistics():
    from tnpx.bo import FittedGP

    X, Y = observations(8)
    surrogate = FittedGP()
    first = surrogate.fit(X, Y, None)
    assert surrogate._previous and not any("transform" in k for k in surrogate._previous)
    second = surrogate.fit(X, 10 * Y + 3, None)  # new data: its own standardisation
    torch.testing.assert_close(second.outcome_transform.means, (10 * Y + 3).mean(0, keepdim=True))
    assert first.covar_module.lengthscale.shape == second.covar_module.lengthscale.shape
    surrogate.reset()
    assert surrogate._previous is None


# -- incremental surrogates ------------------------------------------------------------------------
def tiny_inc_tnp():
    torch.manual_seed(0)
    return tnpx.build_model("inc-tnp", dim_model=16, n_layers=2, n_heads=2, dim_head=8, dim_ff=16)


def test_incremental_surrogate_chooses_what_re_encoding_chooses():
    """inc-tnp's loop adds each observation by an update; the posterior, hence every choice,
    is the one re-encoding all observations gives."""
    task = gp_task(2)
    kw = dict(n_init=3, n_iter=8, seed=1)
    updated = NeuralSurrogate(tiny_inc_tnp())
    assert updated.incremental
    a = run_bo(updated, task, **kw)
    b = run_bo(NeuralSurrogate(tiny_inc_tnp(), incremental=False), task, **kw)
    assert a.chosen == b.chosen and a.regret == b.regret
    assert updated._stream.n_observed == 3 + 8 - 1  # grown by updates, never re-encoded
    again = run_bo(updated, task, **kw)  # reset() starts a fresh stream
    assert again.chosen == a.chosen


def test_incremental_surrogate_posterior_and_conditioning():
    X, Y = observations(5)
    net = tiny_inc_tnp()
    surrogate = NeuralSurrogate(net)
    fitted = surrogate.fit(X[:3], Y[:3], None)
    fitted = surrogate.fit(X, Y, None)  # two new observations: one update
    plain = NPSurrogate(net, X.float(), Y.float())
    q = torch.rand(4, 1, 1, dtype=torch.float64) * 4 - 2
    torch.testing.assert_close(fitted.posterior(q).mean, plain.posterior(q).mean)
    more = fitted.condition_on_observations(X[:1] + 0.1, Y[:1])
    expected = NPSurrogate(net, torch.cat([X, X[:1] + 0.1]).float(), torch.cat([Y, Y[:1]]).float())
    torch.testing.assert_close(more.posterior(q).mean, expected.posterior(q).mean)
    with pytest.raises(ValueError, match="encoding"):
        NPSurrogate(net, X, Y, standardize=True, encoding=fitted.encoding)
    assert not NeuralSurrogate(tiny_tnp()).incremental  # other models re-encode, unchanged
