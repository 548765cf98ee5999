"""Worked examples on real data that ships inside an installed package (``tnpx[real-data]``).

Each example reads a package's data (a long table of many tasks it writes, or a file as it
comes), trains a model on it from
its config in ``configs/examples/``, scores the model on all held-out test tasks beside a GP
fitted per task and the context's moments (:func:`tnpx.evaluation.user_tasks.evaluate_tasks`), draws
held-out tasks, and writes its results folder under ``results/examples/``
(:mod:`examples.runner`). ``--quick`` runs the same path in seconds
(``tests/examples/test_examples.py``).

    python examples/seattle_temps.py      # Seattle, hourly temperatures: a task is a day
    python examples/sf_temps.py           # San Francisco, the same form; and Seattle's model
                                          # zero-shot on San Francisco's test days
    python examples/iris_air_temperature.py   # E1 air temperature as grid windows (the
                                              # `grid` source, a file read as it comes); the
                                              # trained model unchanged on the A1B scenario
    python examples/iris_maps.py          # the same file at the grid source's defaults: a task
                                          # is one year's map, time not an input
    python examples/elevation_map.py      # a shipped 2D model maps an elevation field from
                                          # scattered points, zero-shot (no training)
    python examples/seattle_rain.py       # Seattle, daily rain: a task is a month; a
                                          # bernoulli-gamma head beside a Gaussian-head control
"""

# The examples' modules, in the order they run (sf_temps reads seattle_temps' trained model).
EXAMPLES = ("seattle_temps", "sf_temps")
