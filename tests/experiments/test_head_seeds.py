"""The seeds-and-budgets study of one head against the Gaussian head
(experiments/likelihoods/head_seeds.py): its mean over seeds and a smoke run."""

import json

import pytest

from experiments.likelihoods import head_seeds as study


def entry(seed: int, steps: int, own: list[float], control: list[float]) -> dict:
    heads = {"beta": {"crps": own}, "gaussian": {"crps": control}}
    return {"seed": seed, "steps": steps, "family": "beta", "heads": heads}


def test_the_mean_over_seeds_is_per_budget_and_its_se_is_over_seeds():
    entries = [
        entry(0, 10, [1.0, 2.0], [1.5, 2.5]),  # gap -0.5
        entry(1, 10, [1.0, 2.0], [1.1, 2.1]),  # gap -0.1
        entry(0, 20, [1.0, 1.0], [0.8, 0.8]),  # gap +0.2 (one seed: no s.e.)
    ]
    means = study.over_seeds(entries)
    assert list(means) == [10, 20]
    mean, se, n = means[10]
    assert (mean, n) == (pytest.approx(-0.3), 2)
    assert se == pytest.approx(0.2)  # std of (-0.5, -0.1) with ddof 1, over sqrt(2)
    assert means[20][0] == pytest.approx(0.2) and means[20][2] == 1
    text = study.reading(entries)
    assert "at 10 steps the beta head's CRPS is below the Gaussian head's by 0.30000" in text
    assert "at 20 steps the beta head's CRPS is above" in text


@pytest.mark.slow
def test_a_quick_run_trains_each_seed_and_writes_the_table(tmp_path):
    assert study.main(["--quick", "--out", str(tmp_path), "--seeds", "0", "1", "--steps", "5"]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "| 5 | 0 |" in text and "| 5 | 1 |" in text and "| 5 | mean of 2 |" in text
    entries = json.loads((tmp_path / "results.json").read_text())
    assert [(e["seed"], e["steps"]) for e in entries] == [(0, 5), (1, 5)]
    assert all(set(e["heads"]) == {"beta", "gaussian"} for e in entries)  # no per-task GP
    # two seeds train two different models: their CRPS differ on the same tasks
    assert entries[0]["heads"]["beta"]["crps"] != entries[1]["heads"]["beta"]["crps"]
    assert entries[0]["reference_ll"] == entries[1]["reference_ll"]  # the same test tasks


def test_saved_scores_are_rounded_to_seven_significant_digits_and_keep_their_shape():
    from experiments.kit import rounded

    saved = rounded({"crps": [0.0912345678912, 12345.678912], "n": 3, "name": "beta", "t": (1.0,)})
    assert saved == {"crps": [0.09123457, 12345.68], "n": 3, "name": "beta", "t": [1.0]}


def test_the_gaussian_task_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit):
        study.main(["--task", "gaussian", "--out", "/tmp/never-written"])
    assert "its head is the Gaussian control" in capsys.readouterr().err
