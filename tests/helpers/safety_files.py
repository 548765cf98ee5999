"""Broken YAML configs shared by the safety tests (``tests/safety/test_safety_*.py``): each file's
text and a part of the one-line error it must give."""

from __future__ import annotations

BAD_YAML = {
    "syntax.yaml": ("model: {name: tnp\ntrain: [1,\n", "is not valid YAML: line 2"),
    "list.yaml": ("- 1\n- 2\n", "holds a list; a config is a mapping"),
    "base-int.yaml": ("base: 5\n", "base = 5 must be a YAML file's path"),
    "base-missing.yaml": ("base: nope.yaml\n", "base = 'nope.yaml': no file"),
    "base-list.yaml": ("base: list.yaml\n", "list.yaml holds a list"),
    "interpolation.yaml": ("name: ${nope}\n", "name: Interpolation key 'nope' not found"),
    "section.yaml": ("model: [1, 2]\n", "section.yaml does not fit the config"),
}


def write_bad_yaml(tmp_path):
    for name, (text, _) in BAD_YAML.items():
        (tmp_path / name).write_text(text)
