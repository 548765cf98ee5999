"""Every paper table row, and every TE / KR config file, builds its model at the preset of the
code behind the paper's numbers (``docs/fidelity.md``): TE tables at the TE code's presets
(``te_specs.TE_CODE_PRESETS``), KR tables at ``kr-code``; rows with no reference code at none,
said explicitly."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from experiments.paper_tables import build as kt
from experiments.paper_tables.te_specs import TE_CODE_PRESETS
from tnpx.config import read_yaml
from tnpx.models import build_model

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p for p in (ROOT / "configs").glob("*.yaml") if p.name.startswith(("te", "kr")))
# Configs without a model section: KR-2's BO configs load the KR-1 checkpoints.
NO_MODEL = {p.name for p in (ROOT / "configs").glob("kr2*.yaml")}
# Not a paper table's config: tnpx's own models on the KR-1 budget task (no preset).
TNPX_MODELS = {"kr1-rbf-tnpx-budget.yaml"}
TE_TABLES = ("te2", "te3", "te4")
RUN = {"command": "test", "commit": "abc", "hardware": "cpu", "exact": False, "skipped": []}


def expected_preset(path: Path, model: str) -> str | None:
    if path.name in TNPX_MODELS:
        return None
    if path.name.startswith("kr"):
        return "kr-code"
    return TE_CODE_PRESETS.get(model)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_te_and_kr_config_names_the_preset_of_its_tables_code(path):
    """The model section (with its ``base``) names a preset, or ``null`` explicitly, and it is
    the preset the tables build that model at."""
    if path.name in NO_MODEL:
        assert "model" not in read_yaml(path)
        return
    model = read_yaml(path).model
    assert "preset" in model, f"{path.name} names no preset (write `preset: null` for none)"
    assert model.preset == expected_preset(path, model.name), path.name


@pytest.mark.parametrize("name", list(kt.TABLES))
def test_every_row_names_its_preset_and_its_columns_configs_agree(name):
    spec = kt.TABLES[name]
    for label, row in spec.rows.items():
        assert row.preset != kt.FROM_CONFIG, f"{name} {label} names no preset"
        code = "kr-code" if name.startswith("kr") else TE_CODE_PRESETS.get(row.model)
        assert row.preset == code, (name, label)
    for column in spec.kernels:
        for exact in (False, True):
            model = read_yaml(spec.config_path(column, exact)).model
            presets = {r.preset for r in spec.rows.values() if r.model == model.name}
            assert presets == {model.preset}, (name, column, exact)


@pytest.mark.parametrize("name", TE_TABLES)
@pytest.mark.parametrize("exact", [False, True])
def test_te_cells_build_the_preset_with_only_the_rows_sizes_changed(tmp_path, name, exact):
    """A TE cell's model is its preset's except for D_z = 32 (the configs), TE-2's
    homoscedastic likelihood, and the row's options and budget sizes; the code's transformers
    keep their feed-forward and kernel widths tied to D_z."""
    spec = kt.TABLES[name]
    for column in spec.kernels:
        for label, row in spec.rows.items():
            cfg = kt.cell_config(spec, column, label, exact, tmp_path, [])
            assert cfg.model.get("preset", "absent") == row.preset, (column, label)
            dims = cfg.model["dim_x"], cfg.model["dim_y"]
            built = build_model(row.model, *dims, **cfg.model_options())
            if row.preset is None:
                continue
            code = build_model(row.model, *dims, preset=row.preset)
            allowed = {"dim_model", "likelihood", *row.options, *row.budget}
            allowed |= set(row.column_options.get(column, {}))
            differs = {k for k, v in asdict(built.hyper).items() if asdict(code.hyper)[k] != v}
            assert differs <= allowed, (column, label, differs - allowed)
            if row.model in ("pt-tnp-ist", "te-pt-tnp"):
                assert built.hyper.dim_ff == built.hyper.dim_model == 32
            if row.model == "te-pt-tnp":
                assert built.hyper.dim_relative_hidden is None  # = dim_model, as the code's


def test_te2_convcnp_is_the_gridded_convcnp_on_each_canvas(tmp_path):
    spec = kt.TABLES["te2"]
    for column, canvas in (("t-mnist", 56), ("t-cifar10", 64)):
        cfg = kt.cell_config(spec, column, "convcnp", True, tmp_path, [])
        model = build_model("convcnp", 2, cfg.model["dim_y"], **cfg.model_options())
        h = model.hyper
        assert (h.grid, h.grid_min, h.grid_max, model.grid_points) == ("fixed", -1, 1, canvas)
        assert not h.setconv_trainable and h.cnn == "preact" and h.kernel_size == 9
        spacing = 2 / (canvas - 1)
        assert model.encoder.length_scale.max() < 0.11 * spacing  # a pixel reads itself
        assert "encoder.raw_length_scale" not in dict(model.named_parameters())


def test_te_readmes_name_each_rows_preset_and_the_rows_without_reference_code(tmp_path):
    text = kt.report(kt.TABLES["te2"], {}, RUN)
    line = next(x for x in text.splitlines() if x.startswith("**Presets**"))
    assert "`te-code` with : cnp" not in line  # no empty budget list
    assert "`te-code` with n_layers=3, kernel_size=5: convcnp" in line
    assert "`te-code` with n_layers=2: pt-tnp-m64, pt-tnp-m128" in line
    assert "`released-code` with n_layers=2: te-pt-tnp-m64, te-pt-tnp-m128" in line
    assert "none (no reference code: tnpx's model): rcnp, te-tnp-rope, context-moments" in line
    assert "cambridge-mlg/tetnp" in line
    exact = kt.report(kt.TABLES["te4"], {}, {**RUN, "exact": True})
    line = next(x for x in exact.splitlines() if x.startswith("**Presets**"))
    assert "`te-code`: cnp, pt-tnp;" in line and "`released-code`: te-pt-tnp (" in line
    assert "none (no reference code: tnpx's model): gp, rcnp, context-moments" in line


KR_TRANSFORMERS = ("tnp-d", "tnp-kr-full", "tnp-kr-fast")
KR_STEPS = {"kr1": 1500, "kr3": 1500, "kr4": 3000}


@pytest.mark.parametrize(
    "table, model",
    [(t, m) for t in ("kr1", "kr3", "kr4") for m in kt.TABLES[t].models if m != kt.ORACLE],
)
def test_kr_budget_rows_build_the_kr_code_preset_with_only_the_transformer_depth_cut(
    tmp_path, table, model
):
    """A KR budget cell builds the row's ``kr-code`` model (the TNP-KR code's function and
    sizes; ``min_std`` 0, or MNIST's 0.05 as in the exact config); the three transformers
    differ only in having 3 of their 6 layers."""
    spec = kt.TABLES[table]
    for column in spec.kernels:
        cfg = kt.cell_config(spec, column, model, False, tmp_path, [])
        assert cfg.protocol == "budget" and cfg.train.out_dir == str(
            tmp_path / f"{table}-{column}" / model
        )
        depth = {"n_layers": 3} if model in KR_TRANSFORMERS else {}
        min_std = {"min_std": 0.05} if column == "mnist" else {}
        assert cfg.model_options() == {"preset": "kr-code", **depth, **min_std}
        exact = kt.cell_config(spec, column, model, True, tmp_path, [])
        assert exact.model_options() == {"preset": "kr-code", **min_std}  # the code's head
        dims = cfg.model["dim_x"], cfg.model["dim_y"]
        assert dims[0] == (1 if table == "kr1" else 2)
        built = build_model(model, *dims, **cfg.model_options())
        code = build_model(model, *dims, preset="kr-code", **min_std)
        differs = {k for k, v in asdict(built.hyper).items() if asdict(code.hyper)[k] != v}
        assert differs == set(depth)
        n = sum(p.numel() for p in built.parameters())
        if model in KR_TRANSFORMERS:
            assert code.hyper.n_layers == 6 and n < sum(p.numel() for p in code.parameters())
        else:
            assert n == sum(p.numel() for p in code.parameters())
        # the training length and optimiser are the budget's
        assert cfg.train.steps == KR_STEPS[table] and cfg.optim.name == "adamw"
        assert cfg.data["batch_size"] == 16


def test_each_kr_readme_says_which_preset_each_row_used(tmp_path):
    kr1 = kt.report(kt.TABLES["kr1"], {}, RUN)
    presets = "`kr-code`: np, cnp, bnp, anp, canp, banp, convcnp, gp-oracle, context-moments; "
    assert f"**Presets**: {presets}" in kr1
    assert "`kr-code` with n_layers=3: tnp-d, tnp-kr-fast, tnp-kr-full (" in kr1
    assert "120–140k" not in kr1
    kr4 = kt.report(kt.TABLES["kr4"], {}, RUN)
    assert "**Presets**: `kr-code`: np, cnp, anp, canp, context-moments; " in kr4
    assert "`kr-code` with n_layers=3: tnp-d, tnp-kr-fast, tnp-kr-full (" in kr4
    assert "NOT the TNP-KR code's function" not in kr4 and "BUDGET_SIZES" not in kr4
    exact = kt.report(kt.TABLES["kr3"], {}, {**RUN, "exact": True, "protocol": "exact"})
    assert (
        "**Presets**: `kr-code`: np, cnp, anp, canp, tnp-d, tnp-kr-fast, tnp-kr-full, gp-oracle"
        in exact
    )


def test_exact_kr_cells_use_the_kr_code_presets(tmp_path):
    """Exact KR cells build each row's model at its ``kr-code`` preset (the TNP-KR code's
    sizes and head: docs/fidelity.md), named in the column's config and by the row."""
    cfg = kt.cell_config(kt.TABLES["kr1"], "rbf", "cnp", True, tmp_path, ["train.steps=5"])
    assert cfg.protocol == "exact" and cfg.train.steps == 5
    assert cfg.model == {"name": "cnp", "dim_x": 1, "dim_y": 1, "preset": "kr-code"}
    for table, column in (("kr1", "rbf"), ("kr3", "rbf"), ("kr4", "mnist")):
        spec = kt.TABLES[table]
        for label in spec.rows:
            cfg = kt.cell_config(spec, column, label, True, tmp_path, [])
            assert cfg.model["preset"] == "kr-code"
            build_model(cfg.model["name"], cfg.model["dim_x"], cfg.model["dim_y"],
                        **cfg.model_options())  # fmt: skip
