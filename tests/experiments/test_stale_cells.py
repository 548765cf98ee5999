"""Cells cached before the tables moved to the reference codes' presets are refused, naming the
files, before any training (``tests/fixtures/pre-preset-cells``: real cells from ``results/``);
cells of the current specs are reused; a cell of other settings, of the old budget options or
of a preset whose options changed since is stale. Training and scoring are faked."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import tnpx.evaluation.protocol
from experiments.paper_tables import build as kt
from experiments.paper_tables import cells
from experiments.paper_tables import te_ablation as ta
from tests.helpers.table_fakes import fake_cell
from tnpx.checkpoint import save
from tnpx.config import TrainConfig, config_to_yaml, load_config
from tnpx.evaluation.protocol import Metrics
from tnpx.models import build_model
from tnpx.models.registry import PRESETS

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "pre-preset-cells"


@pytest.fixture
def out(tmp_path):
    """A copy of the pre-preset cells as a table output folder."""
    shutil.copytree(FIXTURES, tmp_path / "results")
    return tmp_path / "results"


@pytest.fixture
def no_training(monkeypatch):
    """Any training or scoring fails the test: a refusal must come before any work."""

    def fail(*args, **kwargs):
        raise AssertionError("trained or scored although cached cells are stale")

    monkeypatch.setattr(kt, "run_cell", fail)
    monkeypatch.setattr(ta, "train_or_load", fail)
    monkeypatch.setattr(ta, "cached_evaluate", fail)


def refusal(argv: list[str], main=kt.main) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return str(exit_info.value.code)


def fake_metrics(ll: float = 0.5) -> Metrics:
    return Metrics(
        model="te-pt-tnp", n_tasks=4, ll=ll, ll_se=0.1, coverage95=0.95,
        oracle_ll=0.0, oracle_ll_se=0.1, gap=-ll, gap_se=0.1,
    )  # fmt: skip


def test_a_pre_preset_cell_of_a_planned_row_is_refused_naming_what_changed(out, no_training):
    text = refusal(["--tables", "kr4", "--columns", "mnist", "--models", "tnp-d",
                    "--out", str(out), "--runs", str(out / "runs")])  # fmt: skip
    assert "1 cached cells or runs do not belong to the current tables" in text
    assert f"{out / 'kr4' / 'cells' / 'mnist-tnp-d.json'} was computed with other settings" in text
    assert "model.preset '-' -> 'kr-code'" in text and "model.scale_transform 'exp'" in text


def test_a_pre_preset_cell_of_another_row_is_refused_too(out, no_training):
    """The README shows every cached cell of the table, so a stale cell of a row this command
    does not compute is refused as well; the rcnp cell (no reference code: the same model as
    before the presets) is not."""
    text = refusal(["--tables", "te2", "--columns", "t-mnist", "--models", "rcnp",
                    "--out", str(out), "--runs", str(out / "runs")])  # fmt: skip
    lines = text.splitlines()[1:]
    assert len(lines) == 1 and str(out / "te2" / "cells" / "t-mnist-convcnp.json") in lines[0]
    assert "a cell from before the presets" in lines[0]
    assert "model.cnn 'plain' -> '-'" in lines[0] and "model.preset '-' -> 'te-code'" in lines[0]
    assert "t-mnist-rcnp" not in text


def test_cells_of_the_current_specs_are_reused(out, monkeypatch, capsys):
    """With the stale cell deleted, the table is built from the cached rcnp cell without any
    training (the README lists it)."""
    (out / "te2" / "cells" / "t-mnist-convcnp.json").unlink()
    monkeypatch.setattr(cells, "compute_cell", lambda *a, **k: pytest.fail("recomputed a cell"))
    kt.main(["--tables", "te2", "--columns", "t-mnist", "--models", "rcnp",
             "--out", str(out), "--runs", str(out / "runs")])  # fmt: skip
    assert "(cached)" in capsys.readouterr().out
    assert "| rcnp | " in (out / "te2" / "README.md").read_text()


def test_a_current_cell_of_a_changed_row_is_refused_after_the_change(out, monkeypatch):
    """A cell written with the current spec's settings passes; changing the row's preset
    options afterwards makes it stale."""
    spec = kt.TABLES["te2"]
    args = kt.parse_args(["--tables", "te2", "--columns", "t-mnist", "--models", "rcnp"])
    plans = {"te2": kt.planned_cells(spec, args, out / "runs")}
    cfg = kt.cell_config(spec, "t-mnist", "convcnp", False, out / "runs", [])
    path = kt.cell_path(out, "te2", "t-mnist", "convcnp")
    cell = kt.Cell.from_json(path.read_text())
    cell.settings = kt.settings(cfg)
    path.write_text(cell.to_json())
    assert kt.stale_cells(plans, args, out, out / "runs") == []
    code = dict(PRESETS["convcnp"]["te-code"])
    monkeypatch.setitem(PRESETS["convcnp"], "te-code", {**code, "kernel_size": 7})
    (reason,) = kt.stale_cells(plans, args, out, out / "runs")
    assert "t-mnist-convcnp.json holds a model other than" in reason
    assert "model.preset_options changed" in reason


# --- the TE ablation --------------------------------------------------------------------------


def test_the_ablation_rows_are_the_released_code_with_and_without_input_adjustment():
    configs = ta.variant_configs(exact=False)
    (with_stem, adjusted), (without_stem, released) = configs.values()
    assert (with_stem, without_stem) == ("te-ablation-input-adjustment", "te1-te-pt-tnp")
    for cfg in (adjusted, released):
        assert cfg.model["name"] == "te-pt-tnp" and cfg.model["preset"] == "released-code"
    extra = {k: v for k, v in adjusted.model.items() if released.model.get(k) != v}
    assert extra == {"pseudo_init": "attention", "location_update": True}
    assert adjusted.train.out_dir != released.train.out_dir
    assert "input-adjustment" in adjusted.train.out_dir
    assert {k: v for k, v in adjusted.data.items()} == released.data


def test_the_ablation_refuses_a_cell_without_settings_before_training(out, no_training):
    text = refusal(["--out", str(out / "te_ablation")], ta.main)
    cell = out / "te_ablation" / "cells" / "te1-te-pt-tnp-uniform.json"
    assert f"{cell}: records no settings (a cell from before the presets)" in text
    assert "delete them" in text


def test_the_ablation_reuses_its_own_cells_and_refuses_them_after_a_change(out, monkeypatch):
    (out / "te_ablation" / "cells" / "te1-te-pt-tnp-uniform.json").unlink()
    configs = ta.variant_configs(exact=False)
    for stem, cfg in configs.values():  # runs of this machine's runs/ must not matter
        cfg.train.out_dir = str(out / "runs" / stem)
    monkeypatch.setattr(tnpx.evaluation.protocol, "evaluate", lambda *a, **k: fake_metrics())
    monkeypatch.setattr(tnpx.evaluation.protocol, "build_test_sampler", lambda *a, **k: None)
    folder = out / "te_ablation"

    def scored(cfg, stem, test):  # what ta.main does for each cell
        cell = ta.cell_path(folder, stem, test)
        settings = ta.cell_settings(cfg, test)
        return ta.cached_evaluate(None, cfg, cell, settings=settings, **ta.TESTS[test])

    for stem, cfg in configs.values():
        for test in ta.TESTS:
            scored(cfg, stem, test)
    assert ta.stale_reasons(configs, folder) == []
    cached = json.loads(ta.cell_path(folder, "te1-te-pt-tnp", "bimodal").read_text())
    assert cached["settings"]["test_data"] == {"input_distribution": "bimodal"}
    assert cached["settings"]["model"]["preset"] == "released-code"
    # the same cell read back, not recomputed
    monkeypatch.setattr(
        tnpx.evaluation.protocol, "evaluate", lambda *a, **k: pytest.fail("recomputed")
    )
    stem, cfg = configs["TE-PT-TNP (input adjustment)"]
    assert scored(cfg, stem, "uniform").ll == 0.5
    cfg.model["n_pseudo"] = 16  # the row changes: its cells are stale
    reasons = ta.stale_reasons(configs, folder)
    assert len(reasons) == 2 and all("te-ablation-input-adjustment" in r for r in reasons)


def cached_kr1_cell(tmp_path, model: str, cfg) -> Path:
    """A cached KR-1 ``rbf`` cell of ``model`` under ``tmp_path`` that records the settings of
    ``cfg``; its path."""
    path = kt.cell_path(tmp_path, "kr1", "rbf", model)
    path.parent.mkdir(parents=True)
    cell = fake_cell("kr1", "rbf", model, 0.3)
    cell.settings = kt.settings(cfg)
    path.write_text(cell.to_json())
    return path


def test_a_cell_from_other_settings_is_refused(tmp_path):
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", [])
    path = cached_kr1_cell(tmp_path, "cnp", cfg)
    assert kt.stale_reason(cfg, path) is None
    shorter = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", ["train.steps=3"])
    assert "other settings" in kt.stale_reason(shorter, path)
    # where the run went does not change the numbers
    elsewhere = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "elsewhere", [])
    assert kt.stale_reason(elsewhere, path) is None


def test_a_train_option_added_at_its_default_leaves_a_cached_cell_current(tmp_path):
    """A TrainConfig field added after a cell was cached changes no cell's settings at its
    default; away from its default the cell is stale. The keys cells always recorded stay in
    the settings at their defaults (a seed is never left out)."""

    @dataclasses.dataclass
    class LaterTrainConfig(TrainConfig):
        later_option: str = "plain"

    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", [])
    path = cached_kr1_cell(tmp_path, "cnp", cfg)
    assert json.loads(path.read_text())["settings"]["train"]["seed"] == TrainConfig().seed
    later = dataclasses.replace(cfg, train=LaterTrainConfig(**dataclasses.asdict(cfg.train)))
    assert "later_option: plain" in config_to_yaml(later)  # it reaches the settings' source
    assert kt.stale_reason(later, path) is None
    later.train.later_option = "changed"
    assert "other settings" in kt.stale_reason(later, path)
    assert kt.settings(later)["train"]["later_option"] == "changed"


def test_a_cell_of_the_old_budget_options_is_refused(tmp_path):
    """A KR-1 cell cached with the budget's former options (tnpx defaults at small sizes,
    min_std 1e-3) is not reused by the ``kr-code`` budget."""
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "tnp-d", False, tmp_path / "runs", [])
    # the former model section of configs/kr1-rbf-budget.yaml, kept in the tnpx-budget file
    run = f"train.out_dir={cfg.train.out_dir}"
    old = load_config(ROOT / "configs" / "kr1-rbf-tnpx-budget.yaml", ["model.name=tnp-d", run])
    assert old.model["dim_model"] == 64 and old.model["min_std"] == 1e-3
    assert old.data == cfg.data and old.train.steps == cfg.train.steps
    path = cached_kr1_cell(tmp_path, "tnp-d", old)
    assert "other settings" in kt.stale_reason(cfg, path)


def test_a_changed_preset_makes_its_cells_and_runs_stale(tmp_path, monkeypatch):
    """A cell or a run made under a preset whose options have changed since is refused, though
    the config names the same preset: the cache key holds what the preset resolved to."""
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", [])
    assert kt.settings(cfg)["model"]["preset_options"] == kt.preset_options(cfg.model) != {}
    path = cached_kr1_cell(tmp_path, "cnp", cfg)
    run = Path(cfg.train.out_dir)
    run.mkdir(parents=True)
    save(build_model("cnp", 1, 1, **cfg.model_options()), run / "model.pt")
    assert kt.stale_reason(cfg, path) is None
    code = dict(PRESETS["cnp"]["kr-code"])
    monkeypatch.setitem(PRESETS["cnp"], "kr-code", {**code, "dim_model": 32})
    assert "other settings" in kt.stale_reason(cfg, path)
    path.unlink()
    reason = kt.stale_reason(cfg, path)
    assert "holds a model built with other options" in reason and "dim_model = 128" in reason


def test_a_run_of_a_preset_that_leaves_a_size_to_the_model_is_not_refused(tmp_path):
    """kr-code tnp-d's preset leaves ``dim_head`` to the model (``None``: dim_model // n_heads);
    its checkpoint records the resolved number, which is the same model, not another one."""
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "tnp-d", False, tmp_path / "runs", [])
    assert cfg.model.get("preset") == "kr-code"
    assert (
        "dim_head" in PRESETS["tnp-d"]["kr-code"]
        and PRESETS["tnp-d"]["kr-code"]["dim_head"] is None
    )
    run = Path(cfg.train.out_dir)
    run.mkdir(parents=True)
    model = build_model("tnp-d", 1, 1, **cfg.model_options())
    save(model, run / "model.pt")
    assert kt.run_stale_reason(cfg) is None
    save(build_model("tnp-d", 1, 1, **{**cfg.model_options(), "dim_head": 8}), run / "model.pt")
    assert "dim_head = 8" in kt.run_stale_reason(cfg)
