"""How far beyond the context `predict` goes: a zoo card's measured safe range warns, its hard
limit refuses (one line, naming the target) unless allowed; other models warn past one width."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import tnpx
from tnpx.apply.predict import extrapolation_limits
from tnpx.apply.unit_choice import ExtrapolationLimits, FarTargets, target_distance
from tnpx.cli import main
from tnpx.user_files import DataError
from tnpx.zoo import model_card, pretrained_path

CONTEXT = pd.DataFrame({"x": np.linspace(10.0, 20.0, 12), "y": np.sin(np.linspace(0, 3, 12))})


@pytest.fixture
def limited(tmp_path, monkeypatch) -> str:
    """A zoo model (in an extra zoo folder) whose card records a safe range of 0.5 context
    widths and a hard limit of 1."""
    card = {**model_card("gp1d-tnp"), "name": "gp1d-limited"}
    card["safe_range"] = {"widths": 0.5, "hard_limit": 1.0}
    (tmp_path / "gp1d-limited.json").write_text(json.dumps(card))
    shutil.copyfile(pretrained_path("gp1d-tnp"), tmp_path / "gp1d-limited.pt")
    monkeypatch.setenv("TNPX_ZOO", str(tmp_path))
    return "gp1d-limited"


def test_distances_are_in_context_widths():
    xc = np.array([[0.0, 5.0], [2.0, 7.0]])  # widths 2 and 2
    xt = np.array([[1.0, 6.0], [3.0, 6.0], [-1.0, 12.0], [1.0, 3.0]])
    np.testing.assert_allclose(target_distance(xc, xt), [0.0, 0.5, 2.5, 1.0])
    assert target_distance(xc[:1], xt).tolist() == [0.0] * 4  # no spread: nothing measured


def test_a_cards_safe_range_warns_and_its_hard_limit_refuses(limited):
    assert extrapolation_limits(limited) == ExtrapolationLimits(0.5, 1.0, model="gp1d-limited")
    inside = pd.DataFrame({"x": [12.0, 23.0]})  # 0.3 widths beyond: quiet
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tnpx.predict(limited, CONTEXT, inside)
    with pytest.warns(UserWarning, match=r"1 of 2 targets .* more than 0.5 context-range"):
        tnpx.predict(limited, CONTEXT, pd.DataFrame({"x": [12.0, 27.0]}))
    far = pd.DataFrame({"x": [12.0, 31.0, 5.0]})  # 1.1 widths beyond: refused
    with pytest.raises(
        DataError, match=r"x=31, 1.1 widths.*gp1d-limited's hard limit.*allow_extrapolation=True"
    ) as err:
        tnpx.predict(limited, CONTEXT, far)
    assert "\n" not in str(err.value)
    with pytest.warns(UserWarning, match="measured to hold only to 0.5 widths"):
        out = tnpx.predict(limited, CONTEXT, far, allow_extrapolation=True)
    assert len(out) == 3 and np.isfinite(out.to_numpy()).all()


def test_the_cli_refuses_and_allows(limited, tmp_path, capsys):
    CONTEXT.to_csv(tmp_path / "c.csv", index=False)
    pd.DataFrame({"x": [31.0]}).to_csv(tmp_path / "t.csv", index=False)
    args = ["predict", limited, "--context", str(tmp_path / "c.csv"), "--targets",
            str(tmp_path / "t.csv")]  # fmt: skip
    assert main(args) == 2
    assert "allow-extrapolation" in capsys.readouterr().err
    assert main([*args, "--allow-extrapolation"]) == 0


def test_models_without_a_measured_range_keep_the_one_width_warning(tmp_path):
    model = tnpx.pretrained("gp1d-tnp")
    assert extrapolation_limits(model) == ExtrapolationLimits()
    path = tmp_path / "mine.pt"
    tnpx.save(model, path)
    assert extrapolation_limits(str(path)) == ExtrapolationLimits()  # not the zoo's file
    with pytest.warns(UserWarning, match="more than 1 context-range"):
        tnpx.predict(model, CONTEXT, pd.DataFrame({"x": [45.0]}), domain=(-2, 2))


def test_far_targets_count_over_chunks():
    far = FarTargets(np.array([[0.0], [1.0]]), ["x"], ExtrapolationLimits(0.5, 2.0))
    far.add(np.array([[0.5], [1.6]]))
    far.add(np.array([[-0.7], [2.9]]))
    assert (far.n, far.n_far) == (4, 3)
    with pytest.raises(DataError, match="1 of this block's 1 targets lie beyond 2"):
        far.add(np.array([[3.5]]))
