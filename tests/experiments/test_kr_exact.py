"""The KR-1 exact table's reading of a finished run: against the paper and the GP oracle."""

from __future__ import annotations

from experiments.paper_tables.kr_exact import TABLES, cell_name, exact_runs, finished_reading


def test_a_finished_run_within_two_standard_errors_meets_the_goal():
    text = finished_reading(
        "tnp-d", -0.455, {"ll": 0.450, "ll_se_batches": 0.004, "oracle_ll": 0.550}, []
    )
    assert "within 2 standard errors of the paper's: the goal is met" in text
    assert "0.100 above the GP oracle (-0.550)" in text


def test_a_run_better_than_the_paper_reaches_it_and_one_worse_does_not():
    better = finished_reading(
        "tnp-kr-full", -0.453, {"ll": 0.474, "ll_se_batches": 0.002, "oracle_ll": 0.568}, []
    )
    assert "0.021 better than the paper's (10.5 s.e.): the paper's accuracy is reached" in better
    assert "goal is met" not in better  # the 2-s.e. band is left, on the better side
    worse = finished_reading(
        "cnp", 0.238, {"ll": -0.300, "ll_se_batches": 0.005, "oracle_ll": 0.568}, []
    )
    assert "0.062 worse than the paper's (12.4 s.e.): the goal is NOT met" in worse


def test_a_missed_goal_reads_the_held_out_curve():
    cell = {"ll": -0.300, "ll_se_batches": 0.005, "oracle_ll": 0.568}
    flat = [(70_000, 0.260), (80_000, 0.245), (90_000, 0.228), (100_000, 0.240)]
    text = finished_reading("cnp", 0.238, cell, flat)
    assert "went 0.245 → 0.240 from step 80,000 to 100,000: flattened" in text
    falling = [(70_000, 0.5), (80_000, 0.4), (100_000, 0.3)]
    assert "still falling" in finished_reading("cnp", 0.238, cell, falling)
    short = [(10_000, 0.5), (20_000, 0.4)]  # no point 20,000 steps before the last
    assert "held-out" not in finished_reading("cnp", 0.238, cell, short)


def test_a_model_without_a_paper_number_reports_only_the_oracle_gap():
    text = finished_reading(
        "convcnp", None, {"ll": 0.4, "ll_se_batches": 0.003, "oracle_ll": 0.5}, []
    )
    assert (
        text
        == "convcnp: test NLL -0.400 ± 0.003, 0.100 above the GP oracle (-0.500) on the same tasks."
    )


def test_every_registered_exact_run_has_a_kernel_a_model_and_its_own_cell():
    runs = exact_runs()
    names = {r.run for r in runs}
    assert {"kr1-rbf-tnp-d", "kr1-rbf-cnp-lecun", "kr1-matern32-tnp-kr-full"} <= names
    lecun = next(r for r in runs if r.run == "kr1-rbf-cnp-lecun")
    assert (lecun.kernel, lecun.model, lecun.label, lecun.paper) == (
        "rbf",
        "cnp",
        "cnp-lecun",
        0.238,
    )
    matern = next(r for r in runs if r.run == "kr1-matern32-tnp-kr-full")
    assert (matern.kernel, matern.model, matern.paper) == ("matern32", "tnp-kr-full", -0.024)
    # the RBF cells keep the names they were first cached under; no two runs share a cell
    assert cell_name("kr1-rbf-cnp", 5000) == "cnp-test5000.json"
    assert len({cell_name(r.run, 5000) for r in runs}) == len(runs)


def test_kr3_runs_are_found_with_their_paper_numbers_and_cells():
    kr3 = TABLES["kr3"]
    runs = {r.run: r for r in exact_runs(kr3)}
    assert set(runs) == {"kr3-tnp-d", "kr3-tnp-kr-full"}
    assert runs["kr3-tnp-d"].paper == 0.484 and runs["kr3-tnp-kr-full"].paper == 0.482
    assert runs["kr3-tnp-d"].kernel == "rbf" and runs["kr3-tnp-d"].label == "tnp-d"
    assert cell_name("kr3-tnp-d", 5000, "kr3") == "tnp-d-test5000.json"
    # KR-1's cells keep the names they were first cached under
    assert cell_name("kr1-rbf-tnp-d", 5000) == "tnp-d-test5000.json"
    assert cell_name("kr1-matern32-tnp-d", 5000) == "matern32-tnp-d-test5000.json"
    assert all(r.run.startswith("kr1-") for r in exact_runs())
