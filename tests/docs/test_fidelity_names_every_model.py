"""docs/fidelity.md names every registered model, if only to say it has no reference code."""

from pathlib import Path

import tnpx


def test_every_registered_model_is_in_the_fidelity_notes():
    text = (Path(__file__).parents[2] / "docs" / "fidelity.md").read_text()
    missing = [name for name in tnpx.list_models() if f"`{name}`" not in text]
    assert not missing, f"docs/fidelity.md does not name {missing}"
