"""experiments/zoo/card_file.py: a zoo card never names uncommitted code unless asked, and then
says so (issue 53: the 2D card shipped naming ``417111a+dirty``)."""

from __future__ import annotations

import json

import pytest

from experiments.zoo import safe_range, ship, train
from experiments.zoo.card_file import DirtyTree, check_clean, dirty_commits, write_card

CLEAN = {"name": "m", "commit": "abc1234", "safe_range": {"commit": "abc1234", "widths": 3.0}}
DIRTY = {
    **CLEAN,
    "safe_range": {"commit": "def5678+dirty", "widths": 3.0},
    "real_fields": {"file": "real-fields-2d.json", "commit": "417111a+dirty"},
    "stages": [{"commit": "0d13dde+dirty"}],
}


def test_every_dirty_commit_of_a_card_is_found_at_any_depth():
    assert dirty_commits(CLEAN) == []
    assert dirty_commits(DIRTY) == [
        "safe_range.commit: def5678+dirty",
        "real_fields.commit: 417111a+dirty",
        "stages[0].commit: 0d13dde+dirty",
    ]


def test_a_dirty_card_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "m.json"
    with pytest.raises(DirtyTree, match=r"names uncommitted code \(safe_range.commit: def5678"):
        write_card(path, DIRTY)
    assert not path.exists()
    assert write_card(path, CLEAN) == CLEAN and json.loads(path.read_text()) == CLEAN


def test_allow_dirty_writes_it_marked_and_says_so(tmp_path, capsys):
    path = tmp_path / "m.json"
    written = write_card(path, DIRTY, allow_dirty=True)
    assert json.loads(path.read_text()) == written == {**DIRTY, "dirty": True}
    assert "names uncommitted code: safe_range.commit" in capsys.readouterr().err


def test_work_is_refused_up_front_on_a_dirty_tree():
    check_clean("abc1234", "x")
    check_clean("abc1234+dirty", "x", allow_dirty=True)
    with pytest.raises(DirtyTree, match="--ship: the working tree has uncommitted code"):
        check_clean("abc1234+dirty", "--ship")


def test_the_zoo_writer_refuses_before_writing_the_weights(tmp_path):
    with pytest.raises(DirtyTree, match="real_fields.commit: 417111a"):
        ship.write_zoo("m", tmp_path / "no-such-run.pt", DIRTY, tmp_path / "zoo")
    assert not (tmp_path / "zoo").exists() or not any((tmp_path / "zoo").iterdir())


def test_the_commands_refuse_a_dirty_tree_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(train, "git_commit", lambda: "abc1234+dirty")
    monkeypatch.setattr(safe_range, "git_commit", lambda: "abc1234+dirty")
    out = ["--zoo", str(tmp_path / "zoo"), "--out", str(tmp_path / "out")]
    assert train.main(["--ship", "gp2d-te-tnp-rope", *out]) == 2
    assert "not shipped: --ship: the working tree has uncommitted code" in capsys.readouterr().err
    assert train.main(["--models", "gp1d-tnp", "--out", str(tmp_path / "out")]) == 2
    assert "not packaged" in capsys.readouterr().err
    assert safe_range.main(["--models", "gp1d-tnp", *out]) == 2
    assert "not measured" in capsys.readouterr().err
    assert not (tmp_path / "zoo").exists()
