"""Worked example 5: the iris air temperature at the ``grid`` source's documented defaults, a
task per year's map; and the trained model on another scenario.

The same file and held-out period as worked example 3 (``examples/iris_air_temperature.py``:
iris-sample-data's E1 run, train 1860-2039, test 2070-2099), but a task is one year's 8 x 8
map (``window: {time: 1}``): time is then not an input, so no test input lies outside the
training range. Scored beside a GP fitted to each map's context and the context's moments,
then, unchanged, on the same maps of the warmer A1B scenario:

    python examples/iris_maps.py        # OMP_NUM_THREADS=1 for one core

Trains from ``configs/examples/grid-iris-e1-maps.yaml``; results in
``results/examples/iris-e1-maps/``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

if not __package__:  # run as a file: the repository root, for `examples.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.iris_air_temperature import EXAMPLE as FIVE_YEARS
from examples.runner import main

EXAMPLE = replace(
    FIVE_YEARS,
    name="iris-e1-maps",
    config_name="grid-iris-e1-maps",
    script="iris_maps",
    title="North American air temperature under the E1 scenario (iris-sample-data), a task "
    "per year's map of 8 × 8 grid points",
    task="one year's map of 8 × 8 grid points (10° × 15°), 64 points, inputs latitude and "
    "longitude (time is not an input: the grid source's default for a one-step window)",
    context_sizes=(1, 2, 4, 8, 16, 32),
    caption=(
        "`{figure}`: three held-out maps of the test period, each with a tenth of its 64 "
        "points as context (6), in {unit}: the truth with the context points, the trained "
        "model's and the per-task GP's predictive mean (RMSE over the map's targets) and "
        "standard deviation. `metrics.json`: every number above, per-split window counts, the "
        "scored maps' first grid points, the validation curve and the config."
    ),
    about=(
        "A map's field is smooth: most of its variance is the north-south gradient and the "
        "land-sea pattern, which change little from one year to the next. The model has seen "
        "180 years of maps of every part of the region: it knows the pattern at each latitude "
        "and longitude, where a GP fitted to a handful of a map's points has to find the "
        "pattern in them. Time is not an input, so a test year is no input value the model "
        "never saw (worked example 3's model, with time as an input, extrapolated in time). "
        "The test years are warmer than any training year: the model centres each map's "
        "outputs on its context's mean (`centre_outputs: true`), so it predicts the pattern "
        "about the year's level and a warmer year is no output level it never saw. Without "
        "centring (the run at commit dbb6702, the same config otherwise) its 95 % coverage was "
        "0.80 and 0.85 at 1 and 2 context points and 0.63-0.81 on A1B. The standard errors over "
        "clusters treat the maps of one test year as one unit (30 years)."
    ),
)


if __name__ == "__main__":
    main(EXAMPLE)
