"""`python -m benchmarks.scaling` (KR-5): resumable points, skip after OOM/timeout, tables, its
command line, and the runner's streaming / dtype / warm-up options."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import benchmarks.scaling_points as scaling_points
import benchmarks.scaling_report as scaling_report
from benchmarks.bench import OK, OOM, TIMEOUT, _run
from benchmarks.scaling import Settings, main, parser, run_scaling
from benchmarks.scaling_report import PAPER_US, format_cell, paper_table, results_table

TINY = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
PROTOCOLS = Path("/work/shared/PROTOCOLS.md")


class FakeMeasure:
    """Stands in for ``benchmarks.bench.measure``: counts calls; ``fail`` maps N to a
    status."""

    def __init__(self, fail: dict[int, str] | None = None):
        self.fail, self.specs = fail or {}, []

    def __call__(self, spec, timeout_s=600, memory_gb=16.0):
        self.specs.append(spec)
        n = spec["n_tgt"] if spec["n_ctx"] == 100 else spec["n_ctx"]  # the sweep's N
        status = self.fail.get(n, OK)
        if status != OK:
            return {"status": status, "seconds": None, "peak_mb": None, "message": "fake"}
        return {
            "status": OK,
            "seconds": 1e-3 * n,
            "peak_mb": 2.0 * n,
            "message": "",
            "streamed": spec["stream"] is not None,
            "timed_calls": spec["repeats"],
        }


def _settings(tmp_path: Path, **kw) -> Settings:
    base = {"models": ["tnp"], "sizes": [1, 10], "threads": 1, "out": tmp_path / "scaling"}
    return Settings(**{**base, **kw})


def _points(settings: Settings) -> dict:
    return json.loads(settings.points_path.read_text())


def _by_n(points: dict, sweep: str = "targets") -> dict[int, dict]:
    return {p["n"]: p for p in points.values() if p["sweep"] == sweep}


@pytest.fixture
def fake(monkeypatch):
    """A fake ``measure`` (set ``.fail`` to make points fail), tiny sizes, and a stub plot
    (matplotlib's log axes take seconds; the end-to-end test draws the real one)."""
    monkeypatch.setattr(scaling_points, "KR_SIZES", TINY)
    # write_reports looks plot_scaling up in benchmarks.scaling_report, so it is patched
    # there.
    monkeypatch.setattr(
        scaling_report, "plot_scaling", lambda found, path: path.write_bytes(b"png")
    )
    measure = FakeMeasure()
    monkeypatch.setattr(scaling_points, "measure", measure)
    return measure


def test_second_run_reuses_every_point(tmp_path, fake):
    settings = _settings(tmp_path)
    report = run_scaling(settings, progress=False)
    assert len(fake.specs) == 4  # 1 model x 2 sweeps x 2 sizes
    assert report is not None and report.exists()
    assert (settings.out / "README.md").exists() and report.with_suffix(".png").exists()

    run_scaling(settings, progress=False)
    assert len(fake.specs) == 4, "a re-run with the same points file ran a point again"
    assert "reused 4" in report.read_text()


def test_points_are_keyed_and_state_their_settings(tmp_path, fake):
    settings = _settings(tmp_path, sizes=[10], sweeps=["context"], dtypes=["bfloat16"])
    run_scaling(settings, progress=False)
    (key, point), *_ = _points(settings).items()
    label = scaling_points.device_label("cpu")
    assert key == f"{label}/tnp/context/10/bfloat16"
    assert point["stream"] == scaling_points.DEFAULT_CHUNK and point["options"] == TINY
    assert point["us_per_sample"] == pytest.approx(1e4)
    spec = fake.specs[0]
    assert spec["n_ctx"] == 10 and spec["n_tgt"] == 100 and spec["dtype"] == "bfloat16"
    assert spec["single_above_s"] == scaling_points.SLOW_CALL_S and spec["batch"] == 1


def test_changed_settings_measure_again(tmp_path, fake):
    run_scaling(_settings(tmp_path, sweeps=["targets"]), progress=False)
    run_scaling(_settings(tmp_path, sweeps=["targets"], stream=None), progress=False)
    assert len(fake.specs) == 4
    assert fake.specs[-1]["stream"] is None


@pytest.mark.parametrize("status, word", [(OOM, "OOM"), (TIMEOUT, "timeout")])
def test_larger_n_are_skipped_after_a_failure(tmp_path, fake, status, word):
    measure = fake
    measure.fail = {10: status}
    settings = _settings(tmp_path, sizes=[1, 10, 100, 1000], sweeps=["targets"])
    report = run_scaling(settings, progress=False)

    assert sorted(s["n_tgt"] for s in measure.specs) == [1, 10]  # 100, 1000 never run
    points = _by_n(_points(settings))
    assert [points[n]["status"] for n in (1, 10, 100, 1000)] == [OK, status, "skipped", "skipped"]
    assert points[1000]["message"] == f"after {word} at N = 10"
    text = report.read_text()
    assert f"| {word} |" in text and f"skipped (after {word} at N = 10)" in text

    # The same limits: the failure is reused, the skips re-derived, nothing runs.
    run_scaling(settings, progress=False)
    assert len(measure.specs) == 2
    # A larger limit gives the failed point (and, if it now finishes, the rest) another go.
    measure.fail = {}
    larger = _settings(tmp_path, sizes=[1, 10, 100, 1000], sweeps=["targets"], timeout_s=900)
    run_scaling(larger, progress=False)
    assert sorted(s["n_tgt"] for s in measure.specs[2:]) == [10, 100, 1000]


def test_errors_do_not_skip_and_are_run_again(tmp_path, fake):
    measure = fake
    measure.fail = {1: "error"}
    settings = _settings(tmp_path, sweeps=["targets"])
    report = run_scaling(settings, progress=False)
    assert [p["status"] for p in _by_n(_points(settings)).values()] == ["error", OK]
    assert "| error |" in report.read_text() and "error: fake" in report.read_text()
    run_scaling(settings, progress=False)
    assert len(measure.specs) == 3  # the error point again, the ok point reused


def test_cells_spell_out_failures():
    ok = {"status": OK, "us_per_sample": 1234.4, "peak_mb": 56.2}
    assert format_cell(ok) == "1,234 µs, 56 MB"
    assert format_cell({"status": OOM}) == "OOM"
    assert format_cell({"status": TIMEOUT}) == "timeout"
    assert format_cell({"status": "skipped", "message": "after OOM at N = 10"}).startswith(
        "skipped"
    )
    assert format_cell(None) == "—"


def test_results_table_has_models_as_rows_and_n_as_columns():
    found = [
        {"model": m, "sweep": "targets", "dtype": "float32", "n": n, "stream": 16384, **r}
        for m, rows in {
            "tnp-d": [(1, {"status": OK, "us_per_sample": 5.0, "peak_mb": 1.0, "streamed": True})],
            "te-tnp": [(10, {"status": OOM})],
        }.items()
        for n, r in rows
    ]
    lines = results_table(found, "targets", "float32").splitlines()
    assert lines[0] == "| model | forward | 10⁰ | 10¹ |"
    assert lines[2] == "| `tnp-d` | streamed (16,384) | 5 µs, 1 MB | — |"
    assert lines[3] == "| `te-tnp` | streamed (16,384) | — | OOM |"


@pytest.mark.skipif(not PROTOCOLS.exists(), reason="needs the project's shared PROTOCOLS.md")
def test_paper_numbers_match_protocols():
    """The copied paper numbers are the ones PROTOCOLS.md (KR-5) restates."""
    section = PROTOCOLS.read_text().split("## KR-5")[1].split("\n## ")[0]
    tables = re.findall(r"((?:\| [\d,]+ \|.*\n)+)", section)
    assert len(tables) == 2
    for sweep, table in zip(("targets", "context"), tables):
        rows = [[c.strip() for c in r.strip("|").split("|")] for r in table.strip().splitlines()]
        for col, model in enumerate(("tnp-d", "tnp-kr-full", "tnp-kr-fast"), start=1):
            expected = tuple(
                None if r[col] == "OOM" else int(r[col].replace(",", "")) for r in rows
            )
            assert PAPER_US[sweep][model] == expected
    assert "45,000 µs" in paper_table("targets") and "OOM" in paper_table("context")


def test_model_options_are_the_kr_sizes_each_model_takes():
    import tnpx

    for model in scaling_points.MODELS:
        assert scaling_points.model_options(model) == scaling_points.KR_SIZES
    defaults = tnpx.build_model("tnp-kr-full").hyper
    assert all(getattr(defaults, k) == v for k, v in scaling_points.KR_SIZES.items())
    assert scaling_points.model_options("cnp") == {"dim_model": 64}


def test_cli_defaults_and_options():
    args = parser().parse_args([])
    assert args.models == list(scaling_points.MODELS) and args.sizes == [10**k for k in range(7)]
    assert args.sweeps == ["targets", "context"] and args.device == "cpu"
    assert args.dtype == ["float32"] and args.stream == 16384
    assert (args.timeout, args.memory_gb, args.repeats, args.threads) == (600, 20, 3, None)
    args = parser().parse_args(["--no-stream", "--dtype", "float32", "bfloat16", "--sizes", "1"])
    assert args.stream is None and args.dtype == ["float32", "bfloat16"] and args.sizes == [1]
    with pytest.raises(SystemExit):
        parser().parse_args(["--stream", "8", "--no-stream"])


def test_cli_rejects_an_unknown_model(tmp_path, capsys, fake):
    code = main(["--models", "tnp", "tnp-x", "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown model(s) tnp-x" in err and "tnp-kr-fast" in err  # lists the valid ones
    assert not fake.specs and not (tmp_path / "points.json").exists()


def test_cli_rejects_cuda_without_cuda(tmp_path, capsys, monkeypatch, fake):
    monkeypatch.setattr(scaling_points.torch.cuda, "is_available", lambda: False)
    assert main(["--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "CUDA is not available" in capsys.readouterr().err


def test_runner_streams_casts_and_warms_up():
    spec = {"model": "tnp", "options": TINY, "n_ctx": 5, "n_tgt": 10, "threads": 1}
    result = _run({**spec, "stream": 4, "repeats": 2, "dtype": "bfloat16"})
    assert result["status"] == OK and result["streamed"] is True
    assert result["timed_calls"] == 2
    assert _run({**spec, "stream": None, "repeats": 1})["streamed"] is False
    # A first call slower than single_above_s is the only timed call.
    assert _run({**spec, "repeats": 3, "single_above_s": 0.0})["timed_calls"] == 1


def test_models_that_cannot_stream_get_the_plain_forward():
    """A latent NP's prediction is joint (``streamable()`` is False): the runner and the
    scaling points fall back to the plain forward instead of erroring in the child."""
    result = _run({"model": "np", "n_ctx": 5, "n_tgt": 10, "stream": 4, "repeats": 1})
    assert result["status"] == OK and result["streamed"] is False
    assert scaling_points.stream_for("np", 8) is None
    assert scaling_points.stream_for("tnp-nd", 8) is None
    assert scaling_points.stream_for("tnp", 8) == 8


@pytest.mark.slow
def test_tiny_end_to_end_run_writes_tables_and_plot(tmp_path, monkeypatch):
    monkeypatch.setattr(scaling_points, "KR_SIZES", TINY)
    settings = _settings(tmp_path, models=["tnp-kr-fast"], sweeps=["targets"], timeout_s=120)
    settings.repeats = 2
    report = run_scaling(settings, progress=False)
    points = _by_n(_points(settings))
    assert [points[n]["status"] for n in (1, 10)] == [OK, OK], points
    assert all(p["streamed"] and p["timed_calls"] == 2 for p in points.values())
    text = report.read_text()
    assert "**Command**" in text and "KR_SIZES" in text and "| `tnp-kr-fast` | streamed" in text
    assert "paper" in text and "86,800 µs" in text
    assert report.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert f"({report.name})" in (settings.out / "README.md").read_text()
