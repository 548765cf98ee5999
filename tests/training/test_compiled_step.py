"""``train.compile`` (issue 53, item 4): the step's forward and loss through ``torch.compile``
(:mod:`tnpx.training.compiled`).

Graphs are counted with dynamo's own counters (``unique_graphs``: one per compile, graph
breaks and recompiles alike) on the ``eager`` backend, which traces as inductor does but
builds no kernels (seconds, not minutes, on this CPU); the loss trajectory is compared on
``aot_eager`` (forward and backward traced by AOTAutograd) and, in the slow suite, inductor.
"""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters

from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.training import compiled
from tnpx.training.loop import fit
from tnpx.training.session import open_session
from tnpx.training.step import train_step


def session(tmp_path, *options: str, backend: str | None = None, **train):
    cfg = load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *options])
    run = open_session(cfg, False, None)
    if backend is not None:
        run.objective = compiled.CompiledObjective(run.objective, backend=backend)
    run.model.train()
    return run


def run_steps(run, steps: int) -> tuple[torch.Tensor, set[int]]:
    """The losses of ``steps`` steps and the context sizes their batches had."""
    losses, sizes = [], set()
    for s in range(steps):
        batch = batch_at(run.sampler, s, 0)
        sizes.add(batch.xc.shape[1])
        losses.append(train_step(run, batch, s).item())
    return torch.tensor(losses), sizes


def graphs_compiled(run, steps: int) -> tuple[int, set[int]]:
    torch._dynamo.reset()
    counters.clear()
    _, sizes = run_steps(run, steps)
    return counters["stats"]["unique_graphs"], sizes


@pytest.mark.parametrize("name", ["tnp", pytest.param("te-tnp", marks=pytest.mark.slow)])
def test_varying_context_sizes_compile_one_graph(name: str, tmp_path):
    """``dynamic=True`` and no size fixed by the model's Python (an f-string of a size, a
    ``range`` over one): 10 steps over several context sizes compile one graph."""
    run = session(tmp_path, f"model.name={name}", backend="eager")
    n_graphs, sizes = graphs_compiled(run, 10)
    assert len(sizes) >= 4, sizes
    assert n_graphs == 1


@pytest.mark.slow
def test_the_count_sees_a_recompile_per_size(tmp_path, monkeypatch):
    """The count can fail: compiled with static shapes, each new context size compiles
    again."""
    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda f, **kw: real(f, **{**kw, "dynamic": False}))
    run = session(tmp_path, backend="eager")
    n_graphs, sizes = graphs_compiled(run, 10)
    assert n_graphs == len(sizes) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_the_compiled_loss_follows_the_eager_one(backend: str, tmp_path):
    """20 steps from the same weights on the same batches: the compiled run's losses stay
    within 1e-3 of the eager run's (fused kernels reorder sums; measured: equal to 4
    decimals with inductor)."""
    eager, _ = run_steps(session(tmp_path / "eager", steps=20), 20)
    torch._dynamo.reset()
    fast, _ = run_steps(session(tmp_path / backend, steps=20, backend=backend), 20)
    assert (fast - eager).abs().max() < 1e-3, (fast - eager).abs().max()


def test_a_failed_compile_warns_and_trains_eagerly(tmp_path):
    def broken(graph, inputs):
        raise RuntimeError("no C compiler here")

    torch._dynamo.reset()
    run = session(tmp_path, backend=broken)
    eager = session(tmp_path / "eager")
    with pytest.warns(UserWarning, match=r"train.compile: torch.compile failed \(.*no C compiler"):
        first = train_step(run, batch_at(run.sampler, 0, 0), 0)
    assert run.objective.fallback_reason is not None
    assert first == train_step(eager, batch_at(eager.sampler, 0, 0), 0)
    train_step(run, batch_at(run.sampler, 1, 0), 1)  # no second warning (pytest.ini: error)


def test_compile_true_trains_a_run(tmp_path, monkeypatch):
    """``train.compile: true`` through ``fit``: the objective is compiled, the run ends with
    its ``model.pt``."""
    monkeypatch.setattr(compiled, "BACKEND", "eager")
    torch._dynamo.reset()
    cfg = load_config(write_tiny(tmp_path), tiny_overrides(tmp_path, steps=5, compile="true"))
    assert cfg.train.compile is True
    result = fit(cfg)
    assert (result.out_dir / "model.pt").exists() and result.steps_done == 5
