"""Worked example 2: San Francisco's hourly temperatures in 2010, one task a day; and the
Seattle example's model zero-shot on San Francisco's days.

vega-datasets ships ``sf-temps.csv`` (8,759 hourly temperatures in °F for 2010), the same form
as Seattle's: a second city checks that the recipe is not tuned to one table, and Seattle's
trained model scored on San Francisco's test days, without training, checks how far what it
learnt about a day carries to another climate (its checkpoint's stored normalisation maps the
°F values into its units):

    python examples/seattle_temps.py && python examples/sf_temps.py

Trains from ``configs/examples/sf-temps.yaml`` (Seattle's config, another table and run folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file: the repository root, for `examples.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.runner import Example, main
from examples.seattle_temps import hourly_days
from tnpx.extras import require


def write_table(path: Path) -> None:
    require("vega_datasets", "real-data", "the worked examples' data")
    from vega_datasets import data

    hourly_days(data.sf_temps()).to_csv(path, index=False)


EXAMPLE = Example(
    name="sf-temps",
    title="San Francisco hourly temperatures (2010), a task per day",
    source=(
        "Hourly air temperatures in °F for San Francisco over 2010, as vega-datasets ships "
        "them (`vega_datasets.data.sf_temps()`, 8,759 rows, read offline from the package)."
    ),
    task="a day: its hourly readings (24, or 23 on the day the clocks go forward), input the "
    "hour 0-23",
    unit="°F",
    write_table=write_table,
    context_sizes=(1, 2, 3, 4, 6, 12, 18),
    transfer_from="seattle-temps",
    about=(
        "The recipe is Seattle's, unchanged: nothing was tuned for this city. The split "
        "hashes the date, so the test days are the same dates as Seattle's, which Seattle's "
        "model did not train on either."
    ),
)


if __name__ == "__main__":
    main(EXAMPLE)
