"""Worked example: Seattle's hourly temperatures in 2010, one task a day.

vega-datasets ships ``seattle-temps.csv`` (8,759 hourly temperatures in °F for 2010; the
``real-data`` extra). Each day is a task (365 days of 24 hours; 23 on the day the clocks go
forward), so the model meta-learns the shape of a day and fills one in from a few readings:

    python examples/seattle_temps.py                 # results/examples/seattle-temps/
    python examples/seattle_temps.py --quick --out /tmp/x    # the test's seconds-long run

Writes the long table ``day,hour,temp`` under ``runs/examples/seattle-temps/``, trains from
``configs/examples/seattle-temps.yaml`` and scores every held-out test day beside a GP fitted
per day and the context's moments (:mod:`examples.runner`).
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file: the repository root, for `examples.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.runner import Example, main
from tnpx.extras import require


def hourly_days(frame) -> object:
    """``date, temp`` hourly rows as the long table ``day`` (YYYY-MM-DD), ``hour`` (0-23),
    ``temp``."""
    import pandas as pd

    return pd.DataFrame(
        {
            "day": frame["date"].dt.strftime("%Y-%m-%d"),
            "hour": frame["date"].dt.hour,
            "temp": frame["temp"],
        }
    )


def write_table(path: Path) -> None:
    require("vega_datasets", "real-data", "the worked examples' data")
    from vega_datasets import data

    hourly_days(data.seattle_temps()).to_csv(path, index=False)


EXAMPLE = Example(
    name="seattle-temps",
    title="Seattle hourly temperatures (2010), a task per day",
    source=(
        "Hourly air temperatures in °F for Seattle over 2010, as vega-datasets ships them "
        "(`vega_datasets.data.seattle_temps()`, 8,759 rows, read offline from the package)."
    ),
    task="a day: its hourly readings (24, or 23 on the day the clocks go forward), input the "
    "hour 0-23",
    unit="°F",
    write_table=write_table,
    context_sizes=(1, 2, 3, 4, 6, 12, 18),
    about=(
        "The readings are smooth (about 1 °F from one hour to the next, recorded to 0.1 °F) and "
        "the days share a shape, coolest around 05:00 and warmest around 15:00, with a level "
        "and a range of their own: a model that has seen 291 days knows the shape and reads "
        "the level and range off a few readings, while a GP fitted to those readings alone "
        "has to find the shape in them, and with a few points settles for a line or a smooth "
        "bump (the figure)."
    ),
)


if __name__ == "__main__":
    main(EXAMPLE)
