"""The likelihood families' results study (experiments/likelihoods/family_scores.py): its
randomised PIT and a smoke run."""

import json

import pytest
import torch

from experiments.likelihoods import family_scores as study
from experiments.likelihoods.scoring import GP_HEAD, randomised_pit
from tnpx.config import load_config
from tnpx.likelihoods import build_likelihood


@pytest.mark.parametrize(
    ("family", "raw"),
    [
        ("poisson", torch.full((1, 4000, 1), 0.3)),  # rate e^0.3: most mass on 0, 1, 2
        ("bernoulli", torch.full((1, 4000, 1), 0.4)),
        ("bernoulli-gamma", torch.tensor([0.0, 0.5, 0.3]).expand(1, 4000, 3)),
    ],
)
def test_the_randomised_pit_of_the_true_law_covers_each_level(family, raw):
    """Draws from the prediction itself: its PIT is uniform, so each central interval covers
    its level (a quantile interval of a discrete law would cover more)."""
    torch.manual_seed(0)
    pred = build_likelihood(family, 1, 1e-3, "softplus")(raw)
    y = pred.sample()
    u = randomised_pit(pred, y, family, torch.Generator().manual_seed(1))
    for level in (0.5, 0.9):
        share = float(((u - 0.5).abs() <= level / 2).double().mean())
        assert abs(share - level) < 0.03, (family, level, share)
    # the plain PIT F(y) of a discrete law is not uniform: the test above can fail
    plain = pred.cdf(y)
    assert abs(float(((plain - 0.5).abs() <= 0.45).double().mean()) - 0.9) > 0.03


@pytest.mark.slow
def test_a_quick_run_writes_the_table_and_add_gp_scores_its_tasks_again(tmp_path):
    assert study.main(["--families", "gaussian", "poisson", "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "| poisson | poisson |" in text and "| poisson | gaussian |" in text
    assert f"| poisson | {GP_HEAD} |" in text and "against the per-task GP, CRPS" in text
    entries = json.loads((tmp_path / "results.json").read_text())
    assert [e["family"] for e in entries] == ["gaussian", "poisson"]
    for entry in entries:
        assert list(entry["heads"])[-1] == GP_HEAD
        for head in entry["heads"].values():
            assert all(0 <= v <= 1 for v in head["coverage"].values())
            assert len(head["crps"]) == entry["n_batches"] * entry["batch_size"]  # 2 <= 16
            assert head["commit"] and head["command"]  # what scored it

    # --add-gp on that study: the same GP scores (same tasks, seeded draws), the heads kept
    old_gp = {e["family"]: e["heads"].pop(GP_HEAD)["crps"] for e in entries}
    (tmp_path / "results.json").write_text(json.dumps(entries))
    assert study.main(["--add-gp", "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "results.json").read_text())
    first = json.loads(json.dumps(entries))
    for old, new in zip(first, again):
        assert (
            new["heads"]["poisson" if old["family"] == "poisson" else "gaussian"]["ll"]
            == (old["heads"][old["family"]]["ll"])
        )
        assert new["heads"][GP_HEAD]["crps"] == old_gp[old["family"]]  # same tasks, same draws
    # --add-gp --families: those tasks' GP rows scored again, the others' left as saved
    for entry in again:
        entry["heads"][GP_HEAD]["crps"] = [c + 1.0 for c in entry["heads"][GP_HEAD]["crps"]]
    (tmp_path / "results.json").write_text(json.dumps(again))
    assert study.main(["--add-gp", "--families", "gaussian", "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "results.json").read_text())
    assert again[0]["heads"][GP_HEAD]["crps"] == old_gp["gaussian"]
    assert again[1]["heads"][GP_HEAD]["crps"] == [c + 1.0 for c in old_gp["poisson"]]
    # tasks that are not those the heads were scored on: refused (an entry that has its GP
    # scored is left as it is)
    again[1]["heads"].pop(GP_HEAD)
    again[1]["reference_ll"][0] += 1.0
    (tmp_path / "results.json").write_text(json.dumps(again))
    with pytest.raises(SystemExit, match="poisson: the test tasks differ"):
        study.main(["--add-gp", "--out", str(tmp_path)])


def test_the_command_line_names_each_command_and_commit():
    heads = {"poisson": {"command": "python -m a", "commit": "abc"},
             "gaussian": {"command": "python -m a", "commit": "abc"},
             GP_HEAD: {"command": "python -m a --add-gp", "commit": "def"}}  # fmt: skip
    text = study._commands([{"heads": heads}], "zzz")
    assert text == (
        "`python -m a`, commit `abc` (the trained heads); "
        f"`python -m a --add-gp`, commit `def` ({GP_HEAD} rows)"
    )


def _entry(family: str, likelihood) -> dict:
    head = {"ll": [-1.0, -1.2], "crps": [0.5, 0.6], "coverage": {"0.5": 0.5, "0.9": 0.9},
            "train_s": 1.0, "score_s": 1.0}  # fmt: skip
    heads = {family: head, "gaussian": dict(head)}
    return {"family": family, "likelihood": likelihood, "n_batches": 1, "batch_size": 2,
            "reference_ll": [-0.9, -1.1], "heads": heads}  # fmt: skip


@pytest.mark.parametrize(
    ("family", "likelihood", "printed"),
    [
        ("student-t", "student-t", True),  # both densities: compared
        ("beta", "beta", True),  # fractions in (0, 1): a density
        ("beta", {"name": "beta", "spikes": True}, False),  # masses at 0 and 1
        ("bernoulli-gamma", "bernoulli-gamma", False),  # a dry day's probability
        ("poisson", "poisson", False),
    ],
)
def test_the_gaussian_heads_ll_is_printed_only_where_the_familys_is_a_density(
    family, likelihood, printed
):
    own, gaussian = ([c.strip() for c in row.split("|")][1:-1] for row in study.rows(
        _entry(family, likelihood)))  # fmt: skip
    assert own[:2] == [family, family] and own[2] != "—"  # the family's own LL, always
    assert gaussian[1] == "gaussian" and (gaussian[2] != "—") == printed


@pytest.mark.slow  # trains two quick runs (~15 s)
def test_update_rescores_the_named_tasks_and_keeps_the_rest(tmp_path):
    assert study.main(["--families", "gaussian", "--quick", "--out", str(tmp_path)]) == 0
    (before,) = json.loads((tmp_path / "results.json").read_text())
    args = ["--update", "--families", "poisson-tasks-plain-head", "--quick", "--out", str(tmp_path)]
    assert study.main(args) == 0
    kept, new = json.loads((tmp_path / "results.json").read_text())
    assert kept == before  # the saved entry as it was, its provenance included
    assert new["task"] == "poisson-tasks-plain-head" and new["likelihood"] == "poisson"
    assert list(new["heads"]) == ["poisson", "gaussian", GP_HEAD]
    # poisson.yaml's own head is the log-normal one; the variant overrides it
    cfg = load_config(study.CONFIGS / "poisson.yaml")
    assert cfg.model["likelihood"] == {"name": "poisson", "overdispersion": "lognormal"}
    assert "| poisson-tasks-plain-head | poisson |" in (tmp_path / "README.md").read_text()
