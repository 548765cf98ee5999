"""The pretrained models shipped in tnpx.zoo: each loads, matches its card, reproduces its
recorded check evaluation, and serves `tnpx predict NAME` and `tnpx models --pretrained`;
extra zoo folders (`TNPX_ZOO`) add names but never change a shipped one."""

from __future__ import annotations

import json
import math
import os
import shutil
import warnings

import pytest
import torch

import tnpx
from tnpx.checkpoint import CheckpointError
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.evaluation import likelihood_of
from tnpx.evaluation.protocol import build_test_sampler, evaluate
from tnpx.zoo import HERE, RETIRED, checkpoint_file, model_card, pretrained_path

SHIPPED = ["gp1d-tnp", "gp1d-te-tnp"]  # the checkpoint contract: these names always load
ALL_SHIPPED = tnpx.list_pretrained(include_retired=True)
MAX_BYTES = 5_000_000  # one shipped model (issue 20)
# the retired models' warning: the tests below load them by name (pytest.warns still sees it)
pytestmark = pytest.mark.filterwarnings("ignore:gp1d-(te-)?tnp is retired:UserWarning")


def test_the_promised_models_are_shipped():
    assert set(SHIPPED) <= set(ALL_SHIPPED)
    total = sum(pretrained_path(n).stat().st_size for n in ALL_SHIPPED)
    assert total < 8e6  # "a few MB in all"


def test_the_first_zoo_is_retired_from_the_listing_and_still_loads_by_name_and_path():
    """Issue 53: gp1d-tnp and gp1d-te-tnp are confidently wrong beyond their context."""
    listed = tnpx.list_pretrained()
    assert set(SHIPPED) == set(RETIRED) and not set(SHIPPED) & set(listed)
    assert set(listed) < set(ALL_SHIPPED) and set(RETIRED.values()) <= set(listed)
    for name in SHIPPED:
        message = f"{name} is retired from the zoo.*use {RETIRED[name]}"
        with pytest.warns(UserWarning, match=message):
            model = tnpx.pretrained(name)
        assert model.name == model_card(name)["model"]
        with pytest.warns(UserWarning, match="is retired"):
            assert checkpoint_file(name) == pretrained_path(name)
        with warnings.catch_warnings():  # by path: the user chose the file; no warning
            warnings.simplefilter("error")
            assert tnpx.load(pretrained_path(name)).name == model.name
            assert checkpoint_file(str(pretrained_path(name))) == pretrained_path(name)
    with warnings.catch_warnings():  # a listed model loads without one
        warnings.simplefilter("error")
        tnpx.pretrained(listed[0])


def test_a_model_in_an_extra_folder_is_never_retired_by_name(tmp_path, monkeypatch):
    extra = tmp_path / "zoo"
    extra.mkdir()
    for suffix in (".pt", ".json"):
        shutil.copyfile((HERE / "gp1d-tnp").with_suffix(suffix), extra / f"mine{suffix}")
    monkeypatch.setenv("TNPX_ZOO", str(extra))
    assert "mine" in tnpx.list_pretrained() and "gp1d-tnp" not in tnpx.list_pretrained()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tnpx.pretrained("mine")


@pytest.mark.parametrize("name", ALL_SHIPPED)
def test_model_matches_its_card_and_reproduces_its_check_evaluation(name):
    torch.set_num_threads(1)
    card = model_card(name)
    model = tnpx.pretrained(name)
    assert model.name == card["model"] and not model.training
    assert sum(p.numel() for p in model.parameters()) == card["params"]
    assert model.translation_equivariant == card["translation_equivariant"]
    assert card["likelihood"] == likelihood_of(model)  # what its page names
    cfg = load_config(card["config"])
    metrics = evaluate(model, build_test_sampler(cfg), card["check"]["batches"], oracle=False)
    assert metrics.n_tasks == card["check"]["n_tasks"]
    assert metrics.ll == pytest.approx(card["check"]["ll"], abs=1e-4)
    # the recorded held-out evaluation is sensible: below the oracle, not absurdly so
    e = card["eval"]
    assert e["n_tasks"] >= 1000 and 0 <= e["gap"] < 1.0
    assert pretrained_path(name).stat().st_size <= MAX_BYTES
    if "finished" in card:  # shipped from a long run (python -m experiments.zoo.train --ship)
        assert card["finished"] and card["steps"] == card["steps_planned"]
        if card.get("dim_x", 1) == 1:  # a 2D card's own prior is its eval (and its shifts)
            assert card["eval_composite"]["n_tasks"] == e["n_tasks"]
            # the v3 prior (c): on every card shipped since it existed, on as many tasks
            assert card.get("eval_v3", e)["n_tasks"] == e["n_tasks"]


def test_extra_zoo_folders_add_names_and_never_change_a_shipped_one(tmp_path, monkeypatch):
    extra = tmp_path / "zoo"
    extra.mkdir()
    card = {**model_card("gp1d-tnp"), "name": "gp1d-extra"}
    (extra / "gp1d-extra.json").write_text(json.dumps(card))
    shutil.copyfile(pretrained_path("gp1d-tnp"), extra / "gp1d-extra.pt")
    for suffix in (".pt", ".json"):  # a shipped name in an extra folder: ignored
        shutil.copyfile((HERE / "gp1d-te-tnp").with_suffix(suffix), extra / f"gp1d-tnp{suffix}")
    (extra / "gp1d-no-weights.json").write_text("{}")  # a card without weights: not a model
    monkeypatch.setenv("TNPX_ZOO", os.pathsep.join([str(tmp_path / "missing"), str(extra)]))
    names = tnpx.list_pretrained(include_retired=True)
    assert set(SHIPPED) | {"gp1d-extra"} <= set(names) and "gp1d-no-weights" not in names
    assert pretrained_path("gp1d-tnp") == HERE / "gp1d-tnp.pt"
    assert model_card("gp1d-tnp")["model"] == "tnp"
    assert checkpoint_file("gp1d-extra") == extra / "gp1d-extra.pt"
    assert model_card("gp1d-extra") == card and tnpx.pretrained("gp1d-extra").name == "tnp"
    monkeypatch.delenv("TNPX_ZOO")
    with pytest.raises(ValueError, match="no pretrained model 'gp1d-extra'"):
        tnpx.pretrained("gp1d-extra")


def test_unknown_name_lists_the_shipped_ones():
    with pytest.raises(ValueError, match="gp1d-tnp"):
        tnpx.pretrained("gp9d-magic")


def test_a_name_resolves_in_one_place_and_an_unknown_one_lists_the_shipped(tmp_path, capsys):
    assert checkpoint_file("gp1d-tnp") == pretrained_path("gp1d-tnp")
    assert checkpoint_file(str(pretrained_path("gp1d-tnp"))) == pretrained_path("gp1d-tnp")
    names = ", ".join(tnpx.list_pretrained())  # the listed ones: not the retired
    assert "gp1d-v2-tnp" in names and "gp1d-tnp," not in names
    with pytest.raises(CheckpointError, match=f"gp9d-magic: no such checkpoint file .*{names}"):
        checkpoint_file("gp9d-magic")
    (tmp_path / "c.csv").write_text("x,y\n1,2\n2,3\n")
    (tmp_path / "t.csv").write_text("x\n1.5\n")
    with pytest.raises(CheckpointError, match=names):
        tnpx.predict("gp9d-magic", tmp_path / "c.csv", tmp_path / "t.csv")
    args = ["--context", str(tmp_path / "c.csv"), "--targets", str(tmp_path / "t.csv")]
    for command in (["predict", "gp9d-magic", *args], ["eval", "gp9d-magic"]):
        assert main(command) == 2
        assert names in capsys.readouterr().err


def test_models_pretrained_lists_them(capsys):
    assert main(["models", "--pretrained"]) == 0
    out = capsys.readouterr().out
    for name in SHIPPED:  # retired: no row, a line naming the replacement
        assert f"| {name} |" not in out and f"\n- {name}: use {RETIRED[name]}" in out
    assert "Retired (too narrow beyond the context" in out
    assert "the same 1,024 held-out 1D single-kernel GP tasks for every 1D model" in out
    for name in tnpx.list_pretrained():
        prior = (
            "2D composite" if name.startswith("gp2d") else
            "single + composite" if "-v2-" in name or "-v3-" in name else "single-kernel"
        )  # fmt: skip
        row = next(line for line in out.splitlines() if line.startswith(f"| {name} |"))
        assert f"| {model_card(name)['model']} |" in row and f"| {prior} GPs |" in row
        card = model_card(name)  # steps: all stages of a fine-tuned model
        stages = f" ({len(card['stages']) + 1} stages)" if card.get("stages") else ""
        assert f"| {card.get('steps_total', card['steps']):,}{stages} |" in row
        assert f"\n- {name}: {model_card(name)['trained_on']}\n" in out


def test_predict_by_name_in_the_users_units(tmp_path):
    x = torch.linspace(100, 200, 15)
    context = tmp_path / "ctx.csv"
    context.write_text(
        "t,v\n" + "".join(f"{a:.3f},{1000 + 50 * math.sin(a / 15):.4f}\n" for a in x.tolist())
    )
    targets = tmp_path / "tgt.csv"
    targets.write_text("t\n150.5\n172.0\n")
    frame = tnpx.predict("gp1d-tnp", context, targets)
    assert list(frame["t"]) == [150.5, 172.0]
    truth = 1000 + 50 * torch.sin(torch.tensor([150.5, 172.0]) / 15)
    # interpolation between noiseless-ish points in the user's units
    assert (torch.tensor(frame["v_mean"].to_numpy()) - truth).abs().max() < 15
    assert (frame["v_std"] > 0).all() and (frame["v_std"] < 30).all()
    out = tmp_path / "pred.csv"
    code = main(
        [
            "predict",
            "gp1d-te-tnp",
            "--context",
            str(context),
            "--targets",
            str(targets),
            "--out",
            str(out),
        ]
    )
    assert code == 0 and out.read_text().startswith("t,v_mean")


def test_eval_and_plot_take_a_name_and_write_to_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "gp1d-tnp", "--n-batches", "1", "--no-oracle"]) == 0
    assert (tmp_path / "gp1d-tnp.eval.json").is_file()
    assert main(["plot", "gp1d-tnp", "--n-tasks", "2"]) == 0
    assert (tmp_path / "gp1d-tnp.png").read_bytes()[:4] == b"\x89PNG"
