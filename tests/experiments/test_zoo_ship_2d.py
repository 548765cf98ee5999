"""experiments/zoo/ship_2d.py: a tiny 2D long run (te-tnp-rope, two inputs) ships into a
zoo folder with a card the pipeline writes: the 1D cards' common fields, its prior's LL beside
the oracle's (the oracle's re-derived in float64 on the same tasks), the shift rows, the 1D
cards' safe-range entry, which tnpx.predict reads for two input columns, and the measured
fields; `--ship` ships it (`--force`: an unfinished one), and zoo.md gains a 2D table while its
1D part stays as it was. The 2D safe range's profile tasks are checked without training."""

from __future__ import annotations

import json
import math
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from experiments.zero_shot import shifts
from experiments.zoo import safe_range as safe
from experiments.zoo import ship, ship_2d
from experiments.zoo import train as pretrained
from experiments.zoo.report import write_report
from experiments.zoo.report_2d import reading
from experiments.zoo.score import ROOT, experiment
from experiments.zoo.ship import MAX_BYTES
from tnpx.apply.predict import extrapolation_limits
from tnpx.apply.unit_choice import ExtrapolationLimits, target_distance
from tnpx.checkpoint import read_checkpoint
from tnpx.config import config_from_dict, load_config
from tnpx.data import batch_at
from tnpx.evaluation.extrapolation import DEFAULT_EDGES, PROFILE_TARGETS, prior_profile_sampler
from tnpx.evaluation.protocol import build_test_sampler
from tnpx.gp.kernels_anisotropic import anisotropic_kernel_matrix
from tnpx.training.loop import fit
from tnpx.user_files import DataError
from tnpx.zoo import HERE

NAME = "gp2d-te-tnp-rope"  # the zoo name (and long run) --ship knows
CONFIG = ROOT / "configs" / f"pretrained-{NAME}.yaml"
FAR = f"{NAME}-far"  # its second stage's long run: --ship gp2d-te-tnp-rope ships this one
FAR_CONFIG = ROOT / "configs" / f"pretrained-{FAR}.yaml"
TINY = [
    "model.dim_model=16", "model.n_layers=1", "model.n_heads=2", "model.dim_head=8",
    "model.dim_ff=16", "data.batch_size=2", "data.max_ctx=20", "data.n_tgt=16",
    "train.steps=4", "train.val_every=4", "train.val_batches=1", "train.checkpoint_every=2",
    "train.progress=false", "schedule.warmup_steps=1", "eval.batch_size=4", "eval.n_batches=2",
]  # fmt: skip
SHIFT_TASKS, PROFILE_BATCHES = 8, 4
V1_CARD = HERE / "gp1d-v2-tnp.json"  # a shipped 1D card (the 1D pipeline's schema)
CONDITIONS = ["unshifted", "translated +10", "density x2", "density x0.5"]


def test_the_2d_profile_draws_targets_three_widths_beyond_the_box_on_both_axes():
    cfg = load_config(CONFIG, ["eval.batch_size=4", "data.max_ctx=40"])
    sampler = prior_profile_sampler(cfg)
    batch = batch_at(sampler, 0, split="test")
    assert batch.xt.shape == (4, PROFILE_TARGETS["n_tgt"], 2) and sampler.config.n_grid == 0
    assert sampler.config.tgt_box == [-14.0, 14.0]  # [-2, 2] widened by 3 widths of 4
    xc, xt = batch.xc.double().numpy(), batch.xt.double().numpy()
    reach = max(target_distance(xc[b], xt[b]).max() for b in range(4))
    assert 2.5 < reach < 4.5  # ~3 widths of a context (narrower than the box: a bit more)
    for axis in (0, 1):  # far on one axis alone, inside the box on the other: not only corners
        assert ((np.abs(xt[..., axis]) > 8) & (np.abs(xt[..., 1 - axis]) < 2)).any()
    box = load_config(CONFIG, ["data.box=[0.0, 1.0]"])
    assert prior_profile_sampler(box).config.tgt_box == [-3.0, 4.0]
    one_d = {"name": "gp", "batch_size": 4, "kernels": ["rbf"], "layout": "uniform"}
    assert prior_profile_sampler(config_from_dict({"data": one_d})).config.tgt_range == [-14, 14]
    other = config_from_dict({"data": {"name": "sawtooth", "batch_size": 4}})
    with pytest.raises(ValueError, match="gp, gp-composite, gp2d-composite data, got 'sawtooth'"):
        prior_profile_sampler(other)


def test_the_2d_reading_words_the_cards_shifts_safe_range_and_fields():
    change = {"change": [-0.05, 0.01], "oracle_change": [0.0, 0.0]}
    card = {
        "eval": {"gap": 0.4, "gap_se": 0.02},
        "shifts": {"conditions": {"unshifted": {**change, "change": [0.0, 0.0]},
                                  "density x2": change}},
        "safe_range": {"widths": 2.5, "hard_limit": 3.0, "profile": [
            {"n": 9, "high": 0.5, "coverage95": 0.94}, {"n": 9, "high": 1.0, "coverage95": 0.91},
            {"n": 9, "high": 2.0, "coverage95": 0.5}]},
    }  # fmt: skip
    fields = {"a/30": {"model": {"nll": [5.0, 0.1]}, "fitted GP": {"nll": [6.0, 0.1]}},
              "a/100": {"model": {"nll": [5.0, 0.1]}, "fitted GP": {"nll": [4.0, 0.1]}},
              "file": "x.json"}  # fmt: skip
    text = reading("m", card, fields)
    assert text.startswith("`m` is 0.400 ± 0.020 nats per target point from the GP oracle")
    assert "density x2 -0.050 ± 0.010 (the oracle's: 0.000 at most)" in text
    assert "unshifted" not in text and "hold out to 2.5 context widths" in text
    assert "within one width of it: 0.910)" in text  # the 2-width bin is beyond one width
    assert "below the fitted GP's in 1 of 2 field and context-size cells (a/30)" in text
    assert "measured fields" not in reading("m", {**card, "safe_range": None}, None)


# -- a tiny run, shipped (marked slow: the file's runs and shippings take ~10 s) ----------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A long-runs folder: the tiny run finished as ``gp2d-te-tnp-rope``, its second stage
    (``gp2d-te-tnp-rope-far``, from its config, fine-tuned from its model.pt) finished too, and
    one stopped after its first step (``gp2d-unfinished``)."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("long-runs")
    for name, seconds in ((NAME, None), ("gp2d-unfinished", 1e-9)):
        fit(load_config(CONFIG, [*TINY, f"train.out_dir={root / name}"]), max_seconds=seconds)
    far = [*TINY, f"train.out_dir={root / FAR}", f"train.init_from={root / NAME / 'model.pt'}"]
    fit(load_config(FAR_CONFIG, far))
    return root


def _real_fields(models: dict[str, str]) -> dict:
    """A real-fields-2d.json run (experiments/zero_shot/fields.py's keys; values made up)."""
    summary = {m: {"rmse": [40.0, 4.0], "nll": [5.5, 0.1], "seconds": 0.01} for m in models}
    summary["fitted GP"] = {"rmse": [20.0, 2.0], "nll": [4.5, 0.1], "seconds": 1.5}
    results = {f"topobathy/{n}": {"windows": [], "summary": summary} for n in (30, 100)}
    return {"commit": "f1e1d00", "n_windows": 16, "models": models, "results": results}


@pytest.fixture(scope="module")
def shipped(runs, tmp_path_factory):
    """The finished run shipped into a zoo folder as ``gp2d-te-tnp-rope`` (tiny eval sizes),
    with a real-fields result that scored it by that name."""
    zoo, results = tmp_path_factory.mktemp("zoo"), tmp_path_factory.mktemp("results")
    (results / "real-fields-2d.json").write_text(json.dumps(_real_fields({"rope": NAME})))
    card = ship.ship(
        NAME, runs / NAME, zoo, provenance=("abc1234", "python -m experiments.zoo.train --ship"),
        results=results, dim=2, shift_tasks=SHIFT_TASKS, profile_batches=PROFILE_BATCHES,
    )  # fmt: skip
    return card, zoo


@pytest.mark.slow
def test_the_card_has_the_common_fields_and_the_2d_scores(shipped, runs):
    card, zoo = shipped
    model = tnpx.load(runs / NAME / "model.pt")
    assert card["name"] == NAME and card["model"] == model.name == "te-tnp-rope"
    assert card["params"] == sum(p.numel() for p in model.parameters()) and card["dim_x"] == 2
    assert card["finished"] and card["steps"] == card["steps_planned"] == 4
    assert card["train_s"] > 0 and card["eval_s"] > 0 and card["commit"] == "abc1234"
    assert f"--runs {NAME} {FAR} --minutes M" in card["train_command"]  # both stages
    assert card["config"] == str(runs / NAME / "config.yaml")
    assert card["trained_on"].startswith("2D GPs: per task a sum of a smooth RBF")
    assert "10–20 context points on [-2.0, 2.0]², 16 targets" in card["trained_on"]
    # the 1D cards' fields, less those of the 1D priors, the stages and the measured series
    v1 = json.loads(V1_CARD.read_text())
    only_1d = {"per_kernel", "eval_composite", "stages", "steps_total", "train_s_total"}
    assert set(v1) - set(card) == only_1d | {"real_series"}
    assert set(card) - set(v1) == {"dim_x", "shifts", "real_fields"}
    for key in set(card) & set(v1) - {"safe_range", "eval", "check"}:
        assert type(card[key]) is type(v1[key]) or v1[key] is None, key
    e = card["eval"]
    assert set(e) == set(v1["eval"])
    assert e["n_tasks"] == 8 and 0 <= e["coverage95"] <= 1
    assert e["gap"] == pytest.approx(e["oracle_ll"] - e["ll"])
    assert set(card["check"]) == {"batches", "n_tasks", "ll"} and card["check"]["n_tasks"] == 8
    record = read_checkpoint(zoo / f"{NAME}.pt")
    assert "train_state" not in record and (zoo / f"{NAME}.pt").stat().st_size <= MAX_BYTES


def _oracle_ll_float64(batch) -> torch.Tensor:
    """Per task ``[batch]``: the exact GP posterior's LL per target point under the task's own
    kernel (``Batch.info``), re-derived in float64 from the kernel matrices."""
    info = batch.info
    x = torch.cat([batch.xc, batch.xt], 1).double()
    k = anisotropic_kernel_matrix(info["kernel"], info["transform"], info["variance"], x, x)
    n = batch.xc.shape[1]
    k_cc = k[:, :n, :n] + torch.diag_embed(
        (info["noise_ctx"].double() ** 2 + 1e-6)[:, None].expand(-1, n)
    )
    k_tc, k_tt = k[:, n:, :n], k[:, n:, n:]
    mean = k_tc @ torch.linalg.solve(k_cc, batch.yc.double())
    var = torch.diagonal(k_tt - k_tc @ torch.linalg.solve(k_cc, k_tc.transpose(1, 2)), 0, 1, 2)
    var = var + info["noise_tgt"].double()[:, None] ** 2
    z = (batch.yt.double()[..., 0] - mean[..., 0]) ** 2 / var
    return (-0.5 * (z + var.log() + math.log(2 * math.pi))).mean(1)


@pytest.mark.slow
def test_the_oracle_ll_is_the_exact_gps_on_the_same_test_tasks(shipped, runs):
    card, _ = shipped
    cfg = experiment(runs / NAME / "model.pt")
    sampler = build_test_sampler(cfg)
    lls = torch.cat([_oracle_ll_float64(batch_at(sampler, i, split="test")) for i in range(2)])
    assert card["eval"]["oracle_ll"] == pytest.approx(lls.mean().item(), abs=1e-4)
    # the next batch is other tasks: the card's number is of these ones
    other = _oracle_ll_float64(batch_at(sampler, 2, split="test")).mean().item()
    assert other != pytest.approx(card["eval"]["oracle_ll"], abs=1e-4)


@pytest.mark.slow
def test_the_shift_rows_are_the_harness_on_the_same_tasks(shipped):
    card, _ = shipped
    rows = card["shifts"]["conditions"]
    assert list(rows) == CONDITIONS and card["shifts"]["n_tasks"] == SHIFT_TASKS
    for row in rows.values():
        assert "tasks" not in row and row["max_output_difference"] < 1e-5
        assert row["gap"][0] == pytest.approx(row["oracle_ll"][0] - row["ll"][0])
    assert rows["translated +10"]["shift"] == shifts.SHIFT
    # 8 tasks, batches of 4: the unshifted rows are the prior's first two test batches
    unshifted, prior = rows["unshifted"], card["eval"]
    assert unshifted["ll"][0] == pytest.approx(prior["ll"], abs=1e-9)
    assert unshifted["oracle_ll"][0] == pytest.approx(prior["oracle_ll"], abs=1e-9)


@pytest.mark.slow
def test_the_safe_range_is_the_1d_cards_entry_on_2d_tasks(shipped):
    card, _ = shipped
    found, v1 = card["safe_range"], json.loads(V1_CARD.read_text())["safe_range"]
    assert set(found) == set(v1) and found["commit"] == "abc1234"
    assert found["n_tasks"] == PROFILE_BATCHES * 4
    assert "gp2d-composite prior" in found["tasks"] and "tgt_box [-14.0, 14.0]" in found["tasks"]
    assert len(found["profile"]) == len(DEFAULT_EDGES) and sum(b["n"] for b in found["profile"])
    assert 0 <= found["widths"] <= found["hard_limit"] <= DEFAULT_EDGES[-1]
    assert set(found["profile"][0]) == set(v1["profile"][0])


@pytest.mark.slow
def test_the_real_fields_are_the_newest_file_that_scored_the_name(shipped, tmp_path):
    card, _ = shipped
    real = card["real_fields"]
    assert real["file"] == "real-fields-2d.json" and real["n_windows"] == 16
    assert real["topobathy/30"]["model"]["nll"] == [5.5, 0.1]
    assert real["topobathy/100"]["fitted GP"]["rmse"] == [20.0, 2.0]
    (tmp_path / "real-fields-2d.json").write_text(json.dumps(_real_fields({"x": "other"})))
    assert ship_2d.real_fields_summary(NAME, tmp_path) is None


CONTEXT = pd.DataFrame(  # 30 stations on a 10 x 20 km patch
    np.random.default_rng(0).uniform([0, 100], [10, 120], (30, 2)), columns=["east", "north"]
).assign(y=lambda d: np.sin(d.east / 3) + 0.1 * d.north)


def _targets(east: list[float], north: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"east": east, "north": north})


def _renamed(zoo, card: dict, folder, name: str, **safe_range) -> None:
    """The shipped tiny model into ``folder`` as ``name`` (the package ships a real
    ``gp2d-te-tnp-rope``, which would shadow the tiny one's name), its card's safe range
    overridden by ``safe_range``."""
    folder.mkdir(exist_ok=True)
    shutil.copyfile(zoo / f"{NAME}.pt", folder / f"{name}.pt")
    claim = {**card, "name": name, "safe_range": {**card["safe_range"], **safe_range}}
    (folder / f"{name}.json").write_text(json.dumps(claim))


@pytest.mark.slow
def test_predict_reads_the_2d_cards_safe_range(shipped, tmp_path, monkeypatch):
    card, zoo = shipped
    folder, tiny = tmp_path / "zoo", "gp2d-tiny"
    _renamed(zoo, card, folder, tiny)  # the card as the pipeline wrote it
    _renamed(zoo, card, folder, "gp2d-limited", widths=0.5, hard_limit=1.0)
    monkeypatch.setenv("TNPX_ZOO", str(folder))
    reach, hard = card["safe_range"]["widths"], card["safe_range"]["hard_limit"]
    assert extrapolation_limits(tiny) == ExtrapolationLimits(reach, hard, model=tiny)
    lo, hi = CONTEXT[["east", "north"]].min(), CONTEXT[["east", "north"]].max()
    north = hi.north + (hard + 0.5) * (hi.north - lo.north)  # past the hard limit, north only
    with pytest.raises(DataError, match=f"{tiny}'s hard limit.*allow_extrapolation=True"):
        tnpx.predict(tiny, CONTEXT, _targets([5.0, 5.0], [110.0, north]))
    with pytest.warns(UserWarning, match="calibration was measured to hold only"):
        out = tnpx.predict(
            tiny, CONTEXT, _targets([5.0, 5.0], [110.0, north]), allow_extrapolation=True
        )
    assert np.isfinite(out[["y_mean", "y_std"]].to_numpy()).all()
    # the same model with a card claiming 0.5 widths, hard limit 1: warns, then refuses
    quiet = _targets([5.0, 12.0], [110.0, 104.0])  # 0.2 widths east: inside the safe range
    with pytest.warns(UserWarning, match=r"1 of 2 targets .* more than 0.5 context-range"):
        tnpx.predict("gp2d-limited", CONTEXT, _targets([5.0, 5.0], [110.0, hi.north + 15.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tnpx.predict("gp2d-limited", CONTEXT, quiet)
    east = hi.east + 1.2 * (hi.east - lo.east)  # 1.2 widths east: past the hard limit
    with pytest.raises(DataError, match="gp2d-limited's hard limit"):
        tnpx.predict("gp2d-limited", CONTEXT, _targets([east], [110.0]))


# -- through experiments/zoo/train.py -------------------------------------------------------


@pytest.fixture
def small_shipping(monkeypatch):
    """`--ship`'s shift and safe-range sizes made tiny (the harnesses' defaults: 256 tasks,
    32 batches), and a clean commit (`--ship` refuses a dirty tree: the test's checkout may
    hold uncommitted code)."""
    monkeypatch.setattr(pretrained, "git_commit", lambda: "abc1234")
    monkeypatch.setattr(shifts, "TASKS", SHIFT_TASKS)
    monkeypatch.setattr(safe, "BATCHES", PROFILE_BATCHES)


@pytest.mark.slow
def test_cli_ships_the_2d_run_and_zoo_md_gains_its_table(runs, tmp_path, capsys, small_shipping):
    zoo, out = tmp_path / "zoo", tmp_path / "out"
    zoo.mkdir()
    out.mkdir()
    for suffix in (".pt", ".json"):  # a 1D card beside it (it has both priors' scores)
        shutil.copy(V1_CARD.with_suffix(suffix), zoo)
    (out / "real-fields-2d.json").write_text(json.dumps(_real_fields({NAME: NAME})))
    before, _ = write_report(zoo, tmp_path / "before", runs, "cmd", "c0mm17")
    args = ["--runs", str(runs), "--zoo", str(zoo), "--batches", "2", "--out", str(out)]
    assert pretrained.main(["--ship", NAME, *args]) == 0
    assert f"shipped {NAME} (4 steps) into {zoo}: prior gap" in capsys.readouterr().out
    card = json.loads((zoo / f"{NAME}.json").read_text())
    # the last stage's run and config (long_runs.RUNS), the first recorded as an earlier stage
    assert card["config"] == f"configs/pretrained-{FAR}.yaml" and card["run"].endswith(FAR)
    assert [st["run"].rsplit("/", 1)[-1] for st in card["stages"]] == [NAME]
    assert card["steps_total"] == 8 and "targets on [-6.0, 6.0]²" in card["trained_on"]
    assert "0.5 of the tasks mapped as tnpx.predict maps" in card["trained_on"]
    saved = read_checkpoint(runs / FAR / "model.pt")["state_dict"]
    for key, value in read_checkpoint(zoo / f"{NAME}.pt")["state_dict"].items():
        assert torch.equal(value, saved[key]), key
    assert list(card["shifts"]["conditions"]) == CONDITIONS
    text = (out / "zoo.md").read_text()
    assert text.startswith("# The 1D zoo") and "## The 2D zoo" in text
    e, rows = card["eval"], card["shifts"]["conditions"]
    cells = " | ".join(f"{r['ll'][0]:.3f} ({r['oracle_ll'][0]:.3f})" for r in rows.values())
    row = (
        f"| `{NAME}` | te-tnp-rope | {card['params']:,} | 4 + 4 (2) | — | {e['ll']:.3f} ± "
        f"{e['ll_se']:.3f} | {e['oracle_ll']:.3f} | {e['gap']:.3f} ± {e['gap_se']:.3f} | {cells} "
        f"| {card['safe_range']['widths']:g} | {card['safe_range']['hard_limit']:g} |"
    )
    assert row.replace("| — |", f"| {card['train_s_total'] / 3600:.1f} h |") in text
    assert "| translated +10 LL (oracle) |" in text
    for n in (30, 100):
        assert f"Zero-shot on measured fields, {n} context points" in text
    assert text.count("| topobathy | 40.0 | 20.0 | 5.500 | 4.500 | 150x |") == 2
    assert f"**Reading**: `{NAME}` is {e['gap']:.3f} ± {e['gap_se']:.3f} nats" in text
    assert "below the fitted GP's in 0 of 2 field and context-size cells (none)" in text
    # the 1D part is what it was without the 2D card, word for word
    again, _ = write_report(zoo, tmp_path / "again", runs, "cmd", "c0mm17")
    text_1d = before.read_text()
    assert again.read_text().startswith(text_1d) and "## The 2D zoo" not in text_1d
    cards = json.loads((out / "zoo.json").read_text())
    assert list(cards) == ["gp1d-v2-tnp", NAME]


@pytest.mark.slow
def test_cli_refuses_an_unfinished_2d_run_unless_forced(runs, tmp_path, capsys, small_shipping):
    # which runs take the 2D card: by the config they train from (their copy, else none)
    assert ship_2d.is_2d(runs / "gp2d-unfinished") and not ship_2d.is_2d(tmp_path / "none")
    assert not ship_2d.is_2d(runs / NAME, str(ROOT / "configs" / "pretrained-gp1d-v2-tnp.yaml"))
    zoo = tmp_path / "zoo"
    args = ["--runs", str(runs), "--zoo", str(zoo), "--batches", "1", "--out", str(tmp_path)]
    assert pretrained.main(["--ship", "gp2d-unfinished", *args]) == 1
    assert "step 1 of 4" in capsys.readouterr().err and not zoo.exists()
    assert pretrained.main(["--ship", "gp2d-unfinished", "--force", *args]) == 0
    assert "(1 steps, UNFINISHED)" in capsys.readouterr().out
    card = json.loads((zoo / "gp2d-unfinished.json").read_text())
    assert not card["finished"] and card["steps"] == 1 and card["steps_planned"] == 4
    assert card["dim_x"] == 2 and card["eval"]["n_tasks"] == 4
    saved = read_checkpoint(runs / "gp2d-unfinished" / "checkpoints" / "last.pt")["state_dict"]
    for key, value in read_checkpoint(zoo / "gp2d-unfinished.pt")["state_dict"].items():
        assert torch.equal(value, saved[key]), key
