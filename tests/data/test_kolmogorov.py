"""Kolmogorov flow (tnpx.data.kolmogorov): the solver, trajectories, the cache and the sampler.

Solver grids are tiny (16² / 32²) so the whole file runs in seconds on one thread.
"""

from __future__ import annotations

import math

import pytest
import torch

from tnpx.data import base
from tnpx.data.kolmogorov import (
    CacheNotFoundError,
    KolmogorovConfig,
    KolmogorovSampler,
    KolmogorovSolver,
    generate_trajectories,
    partial_path,
    random_initial_vorticity,
    read_cache,
    write_cache,
)
from tnpx.data.kolmogorov import cache as kc  # patch names where write_cache looks them up

F64 = torch.float64


def _grid(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Physical coordinates ``x, y`` ``[n, n]`` in the solver's "ij" layout."""
    x = torch.arange(n, dtype=F64) * (2 * math.pi / n)
    return torch.meshgrid(x, x, indexing="ij")


# --- solver ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3])
def test_single_mode_decays_exactly(k):
    """cos(kx)cos(ky) has ψ ∝ ω, so u·∇ω = 0 and only ν∇² and drag act on it."""
    reynolds, drag, t = 50.0, 0.3, 1.0
    solver = KolmogorovSolver(
        16, reynolds=reynolds, drag=drag, dt=0.07, dtype=F64, forcing_amplitude=0.0
    )
    x, y = _grid(16)
    omega0 = (torch.cos(k * x) * torch.cos(k * y))[None].repeat(2, 1, 1)
    omega0[1] *= -2.5
    omega = solver.advance(omega0, t)
    expected = omega0 * math.exp(-((2 * k**2) / reynolds + drag) * t)
    rel = (omega - expected).abs().max() / expected.abs().max()
    assert rel < 1e-5


def test_rhs_matches_analytic_advection():
    """The time derivative at t = 0 is -(u ω_x + v ω_y): checks the advection sign and the
    stream-function convention (u = ψ_y, v = -ψ_x with ∇²ψ = -ω)."""
    solver = KolmogorovSolver(32, drag=0.0, reynolds=1e12, dtype=F64, forcing_amplitude=0.0)
    x, y = _grid(32)
    # ω = sin x cos 2y + ½ cos 3x sin y; ψ = ω-mode / |k|² per mode
    omega = torch.sin(x) * torch.cos(2 * y) + 0.5 * torch.cos(3 * x) * torch.sin(y)
    u = -2 / 5 * torch.sin(x) * torch.sin(2 * y) + 0.05 * torch.cos(3 * x) * torch.cos(y)
    v = -1 / 5 * torch.cos(x) * torch.cos(2 * y) + 0.15 * torch.sin(3 * x) * torch.sin(y)
    wx = torch.cos(x) * torch.cos(2 * y) - 1.5 * torch.sin(3 * x) * torch.sin(y)
    wy = -2 * torch.sin(x) * torch.sin(2 * y) + 0.5 * torch.cos(3 * x) * torch.cos(y)
    su, sv = solver.velocity(omega[None])
    torch.testing.assert_close(su[0], u, atol=1e-12, rtol=0)
    torch.testing.assert_close(sv[0], v, atol=1e-12, rtol=0)
    # central difference of one step forward and one backward in time: O(h²) accurate
    h, omega_hat = 1e-3, solver.to_spectral(omega[None])
    forward, backward = solver.step(omega_hat, h), solver.step(omega_hat, -h)
    rate = solver.to_physical(forward - backward)[0] / (2 * h)
    exact = -(u * wx + v * wy)
    assert (rate - exact).abs().max() < 1e-5 * exact.abs().max()


def test_laminar_state_follows_the_forcing():
    """From rest, the flow relaxes to the laminar Kolmogorov state u = A sin(k_f y) / (ν k_f² + α),
    v = 0: checks the sign and size of the forcing and of the velocity."""
    nu, drag, kf_, amp = 0.01, 1.0, 2, 0.5
    solver = KolmogorovSolver(
        16,
        reynolds=1 / nu,
        drag=drag,
        forcing_wavenumber=kf_,
        dt=0.1,
        dtype=F64,
        forcing_amplitude=amp,
    )
    omega = solver.advance(torch.zeros(1, 16, 16, dtype=F64), 25.0)
    u, v = solver.velocity(omega)
    _, y = _grid(16)
    torch.testing.assert_close(u[0], amp * torch.sin(kf_ * y) / (nu * kf_**2 + drag))
    assert v.abs().max() < 1e-8


def test_velocity_stays_divergence_free():
    solver = KolmogorovSolver(32, dt=0.01, dtype=F64)
    omega0 = random_initial_vorticity(2, 32, torch.Generator().manual_seed(3), dtype=F64)
    omega = solver.advance(omega0, 0.5)
    assert not torch.allclose(omega, omega0)  # something happened
    u, v = solver.velocity(omega)
    assert solver.divergence(u, v).abs().max() < 1e-10
    # and the velocity's curl gives the vorticity back
    torch.testing.assert_close(solver.vorticity(u, v), omega, atol=1e-10, rtol=0)
    # also for rough fields with content up to the Nyquist modes
    noise = torch.randn(2, 32, 32, dtype=F64, generator=torch.Generator().manual_seed(0))
    u, v = solver.velocity(noise - noise.mean())
    assert solver.divergence(u, v).abs().max() < 1e-10


def test_random_initial_vorticity():
    g = torch.Generator().manual_seed(0)
    omega = random_initial_vorticity(3, 32, g, max_velocity=2.0, dtype=F64)
    assert omega.shape == (3, 32, 32) and omega.dtype == F64
    assert omega.mean(dim=(-2, -1)).abs().max() < 1e-12
    u, v = KolmogorovSolver(32, dtype=F64).velocity(omega)
    torch.testing.assert_close(
        (u**2 + v**2).sqrt().amax(dim=(-2, -1)), torch.full((3,), 2.0, dtype=F64)
    )
    again = random_initial_vorticity(3, 32, torch.Generator().manual_seed(0), max_velocity=2.0)
    assert again.dtype == torch.float32
    torch.testing.assert_close(again, omega.float())
    assert not torch.allclose(omega[0], omega[1])


def test_solver_rejects_bad_shapes():
    solver = KolmogorovSolver(16)
    with pytest.raises(ValueError, match="16, 16"):
        solver.advance(torch.zeros(1, 8, 8), 0.1)
    with pytest.raises(ValueError, match="even"):
        KolmogorovSolver(15)


# --- trajectories ---------------------------------------------------------------------------

TINY = dict(solver_n=16, out_n=8, spin_up=0.3, snapshot_dt=0.1, n_snapshots=3, dt=0.02)


def test_trajectories_reproducible_from_seed():
    a = generate_trajectories(2, seed=0, progress=False, **TINY)
    b = generate_trajectories(2, seed=0, progress=False, **TINY)
    c = generate_trajectories(2, seed=1, progress=False, **TINY)
    assert a.shape == (2, 3, 8, 8, 2) and a.dtype == torch.float32
    assert torch.isfinite(a).all() and a.abs().max() > 0.1
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)
    # splits draw different initial conditions; trajectory i does not depend on the batch
    t = generate_trajectories(2, seed=0, split="test", progress=False, **TINY)
    assert not torch.allclose(a, t)
    one = generate_trajectories(1, seed=0, start=1, batch=1, progress=False, **TINY)
    torch.testing.assert_close(one[0], a[1], atol=1e-4, rtol=0)


def test_coarsening_is_average_pooling():
    kw = {**TINY, "dtype": F64, "progress": False}
    fine = generate_trajectories(1, **{**kw, "out_n": 16})
    coarse = generate_trajectories(1, **kw)
    assert fine.shape == (1, 3, 16, 16, 2) and coarse.shape == (1, 3, 8, 8, 2)
    pooled = fine.reshape(1, 3, 8, 2, 8, 2, 2).mean(dim=(3, 5))
    torch.testing.assert_close(coarse, pooled)
    with pytest.raises(ValueError, match="multiple of out_n"):
        generate_trajectories(1, **{**kw, "out_n": 6})


def test_blow_up_is_reported():
    with pytest.raises(FloatingPointError, match="smaller dt"):
        generate_trajectories(1, **{**TINY, "dt": 1.0, "spin_up": 20.0, "progress": False})


# --- cache ----------------------------------------------------------------------------------

CACHE = dict(TINY, seed=5, batch=1)


class Interrupted(Exception):
    """Stands in for a killed run (not KeyboardInterrupt, which would stop pytest itself)."""


def test_cache_roundtrip_and_resume(tmp_path, monkeypatch):
    reference = write_cache(tmp_path / "ref.pt", 3, 2, chunk=1, progress=False, **CACHE)
    assert reference["train"].shape == (3, 3, 8, 8, 2)
    assert reference["test"].shape == (2, 3, 8, 8, 2)
    assert reference["train"].dtype == torch.float32
    assert reference["settings"]["n_train"] == 3 and reference["settings"]["seed"] == 5
    # train and test never share a trajectory
    for test_traj in reference["test"]:
        assert (reference["train"] - test_traj).abs().amax(dim=(1, 2, 3, 4)).min() > 1e-3

    # interrupt after two chunks, then resume
    path = tmp_path / "sub" / "k.pt"
    real, calls = kc.generate_trajectories, []

    def flaky(*args, **kwargs):
        if len(calls) == 2:
            raise Interrupted
        calls.append(kwargs["start"])
        return real(*args, **kwargs)

    monkeypatch.setattr(kc, "generate_trajectories", flaky)
    with pytest.raises(Interrupted):
        write_cache(path, 3, 2, chunk=1, progress=False, **CACHE)
    assert not path.exists()
    saved = torch.load(partial_path(path), weights_only=True)
    assert saved["train"].shape[0] == 2 and saved["test"].shape[0] == 0
    # other settings refuse to resume
    with pytest.raises(ValueError, match="other settings"):
        write_cache(path, 3, 2, chunk=1, progress=False, **{**CACHE, "seed": 6})

    resumed_calls: list[int] = []

    def counting(*args, **kwargs):
        resumed_calls.append((kwargs["split"], kwargs["start"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(kc, "generate_trajectories", counting)
    write_cache(path, 3, 2, chunk=1, progress=False, **CACHE)
    assert resumed_calls == [("train", 2), ("test", 0), ("test", 1)]  # only the missing ones
    assert not partial_path(path).exists()
    cache = read_cache(path)
    for split in ("train", "test"):
        assert torch.equal(cache[split], reference[split])
    assert cache["settings"] == reference["settings"]

    # a finished cache with the same settings is returned, not regenerated
    resumed_calls.clear()
    write_cache(path, 3, 2, chunk=1, progress=False, **CACHE)
    assert resumed_calls == []
    with pytest.raises(FileExistsError):
        write_cache(path, 4, 2, chunk=1, progress=False, **CACHE)


def test_read_cache_errors(tmp_path):
    missing = tmp_path / "nope.pt"
    with pytest.raises(CacheNotFoundError, match="tnpx data kolmogorov") as err:
        read_cache(missing)
    assert isinstance(err.value, FileNotFoundError) and str(missing) in str(err.value)
    bogus = tmp_path / "bogus.pt"
    torch.save({"train": torch.zeros(2)}, bogus)
    with pytest.raises(ValueError, match="not a Kolmogorov-flow cache"):
        read_cache(bogus)
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(ValueError, match="tnpx data kolmogorov"):
        read_cache(tmp_path / "text.pt")
    with pytest.raises(CacheNotFoundError):
        KolmogorovSampler(KolmogorovConfig(cache=str(missing)))


def test_sampler_reads_the_cache_subset(tmp_path):
    path = tmp_path / "k.pt"
    cache = write_cache(path, 2, 1, progress=False, **{**CACHE, "n_snapshots": 4})
    config = KolmogorovConfig(cache=str(path), subset="test", block=[4, 4, 2], max_ctx=10)
    sampler = KolmogorovSampler(config, batch_size=3)
    assert torch.equal(sampler.data, cache["test"])
    batch = base.batch_at(sampler, 0, split="test")
    assert batch.info["trajectory"].eq(0).all()


# --- sampler --------------------------------------------------------------------------------


def _velocity(n_traj=3, nt=20, nx=18, ny=17) -> torch.Tensor:
    return torch.randn(n_traj, nt, nx, ny, 2, generator=torch.Generator().manual_seed(0))


def test_sampler_shapes_and_partition():
    data = _velocity()
    sampler = KolmogorovSampler.from_tensor(data, KolmogorovConfig(), batch_size=4, seed=1)
    assert (sampler.dim_x, sampler.dim_y) == (3, 2)
    b = base.batch_at(sampler, 0)
    n_ctx = b.xc.shape[1]
    assert 1 <= n_ctx <= 500
    assert b.xc.shape == (4, n_ctx, 3) and b.yc.shape == (4, n_ctx, 2)
    assert b.xt.shape == (4, 4096 - n_ctx, 3) and b.yt.shape == (4, 4096 - n_ctx, 2)
    for t in (b.xc, b.yc, b.xt, b.yt):
        assert t.dtype == torch.float32
    for x in (b.xc, b.xt):
        assert x.min() >= -3 and x.max() <= 3
    assert b.xt.amin(dim=(0, 1)).tolist() == [-3, -3, -3]
    assert b.xt.amax(dim=(0, 1)).tolist() == [3, 3, 3]
    # context and targets are disjoint and together the whole 16³ block
    for i in range(4):
        points = torch.cat([b.xc[i], b.xt[i]])
        assert torch.unique(points, dim=0).shape[0] == 4096


def test_sampler_values_match_the_source():
    data = _velocity()
    config = KolmogorovConfig(block=[5, 6, 7], min_ctx=3, max_ctx=40)
    sampler = KolmogorovSampler.from_tensor(data, config, batch_size=8)
    nx, ny = data.shape[2], data.shape[3]
    wrapped = False
    for step in range(4):
        b = base.batch_at(sampler, step)
        assert b.xc.shape[1] + b.xt.shape[1] == 5 * 6 * 7
        traj, origin = b.info["trajectory"], b.info["origin"]
        assert origin[:, 2].max() <= data.shape[1] - 7  # no wrap in time
        wrapped |= bool(((origin[:, 0] + 5 > nx) | (origin[:, 1] + 6 > ny)).any())
        for x, y in ((b.xc, b.yc), (b.xt, b.yt)):
            sizes = torch.tensor([5, 6, 7])
            index = ((x + 3) / 6 * (sizes - 1)).round().long()  # [B, N, 3] within the block
            ix = (origin[:, None, 0] + index[..., 0]) % nx
            iy = (origin[:, None, 1] + index[..., 1]) % ny
            it = origin[:, None, 2] + index[..., 2]
            assert torch.equal(y, data[traj[:, None], it, ix, iy])
    assert wrapped  # the periodic wrap was exercised


def test_sampler_reproducible_from_generator():
    data = _velocity()
    sampler = KolmogorovSampler.from_tensor(data, KolmogorovConfig(block=[8, 8, 8], max_ctx=100))
    a = sampler.sample(torch.Generator().manual_seed(7), batch_size=3)
    b = sampler.sample(torch.Generator().manual_seed(7), batch_size=3)
    c = sampler.sample(torch.Generator().manual_seed(8), batch_size=3)
    for name in ("xc", "yc", "xt", "yt"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    assert a.xc.shape != c.xc.shape or not torch.equal(a.yc, c.yc)
    assert base.batch_at(sampler, 0).xc.shape[0] == 16  # default batch_size


def test_max_tgt_keeps_a_subset_of_the_same_task():
    data = _velocity()
    config = KolmogorovConfig(block=[8, 8, 8], max_ctx=100)
    full = KolmogorovSampler.from_tensor(data, config, batch_size=3)
    capped = KolmogorovSampler.from_tensor(
        data, KolmogorovConfig(**{**vars(config), "max_tgt": 50}), 3
    )
    a, b = base.batch_at(full, 2), base.batch_at(capped, 2)
    assert torch.equal(a.xc, b.xc) and torch.equal(a.yc, b.yc)  # the same tasks
    assert b.xt.shape == (3, 50, 3) and torch.equal(a.xt[:, :50], b.xt)
    assert torch.equal(a.yt[:, :50], b.yt)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"max_tgt": 0}, "max_tgt"),
        ({"block": [19, 4, 4], "max_ctx": 10}, "larger than the data"),
        ({"block": [4, 4, 21], "max_ctx": 10}, "larger than the data"),
        ({"block": [4, 4]}, "three positive"),
        ({"min_ctx": 5, "max_ctx": 4}, "min_ctx <= max_ctx"),
        ({"block": [4, 4, 4], "max_ctx": 64}, "no targets"),
        ({"subset": "val"}, "subset"),
        ({"input_range": [3.0, -3.0]}, "input_range"),
    ],
)
def test_sampler_validates_config(options, match):
    with pytest.raises(ValueError, match=match):
        KolmogorovSampler.from_tensor(_velocity(), KolmogorovConfig(**options))
    with pytest.raises(ValueError, match="velocity"):
        KolmogorovSampler.from_tensor(torch.zeros(3, 20, 18, 17), KolmogorovConfig())


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_cli_writes_a_cache_the_sampler_reads(tmp_path):
    from tnpx.cli import main
    from tnpx.data import batch_at, build_sampler

    out = tmp_path / "kf.pt"
    args = [
        "data",
        "kolmogorov",
        "--out",
        str(out),
        "--n-train",
        "1",
        "--n-test",
        "1",
        "--solver-n",
        "16",
        "--out-n",
        "16",
    ]
    assert main(args) == 0
    sampler = build_sampler("kolmogorov", batch_size=2, cache=str(out), max_ctx=50)
    batch = batch_at(sampler, 0)
    assert batch.xc.shape[-1] == 3 and batch.yt.shape[-1] == 2
