"""Plots, in the ``plot`` extra (matplotlib, imported when a figure is drawn).

- :mod:`.tasks_1d`: :func:`plot_1d_tasks` (held-out 1D tasks, models beside the GP oracle).
- :mod:`.images`: :func:`plot_image_tasks`, :func:`plot_image_comparison` (image completion).
- :mod:`.grid`: :func:`plot_grid_tasks`, :func:`window_maps` (a ``grid`` source's windows);
  :mod:`.grid_select`: :func:`restricted`, :func:`selection_box` (the period and region drawn,
  dates as dates).
- :mod:`.stations`: :func:`plot_stations_tasks`, :func:`station_maps` (a ``stations`` source).
- :mod:`.prediction`, :mod:`.map`: :func:`plot_prediction`, :func:`plot_prediction_map`
  (``tnpx predict --plot`` with one or two inputs).
- :mod:`.curves`: :func:`plot_validation_curves`; :mod:`.figures`: :func:`save_figure`;
  :mod:`.data_units`: :class:`DataUnits` (axes in the data's units).

Each name is imported from its module on first use (``from tnpx.plot import plot_grid_tasks``),
so drawing one kind of figure imports no other's sources (a grid's or stations' readers).
"""

from __future__ import annotations

from ..extras import names_on_first_use

# public name -> the module of this package that defines it
_HOMES = {
    "DataUnits": "data_units",
    "MISSING_PIXEL": "images",
    "StationMaps": "stations",
    "WindowMaps": "grid",
    "date_text": "grid_select",
    "grid_figure": "grid",
    "map_dims": "grid",
    "plot_1d_tasks": "tasks_1d",
    "plot_grid_tasks": "grid",
    "plot_image_comparison": "images",
    "plot_image_tasks": "images",
    "plot_prediction": "prediction",
    "plot_prediction_map": "map",
    "plot_stations_tasks": "stations",
    "plot_validation_curves": "curves",
    "prediction_map_figure": "map",
    "restricted": "grid_select",
    "save_figure": "figures",
    "selection_box": "grid_select",
    "station_maps": "stations",
    "stations_figure": "stations",
    "time_dims": "grid_select",
    "window_maps": "grid",
    "window_origins": "grid_select",
}

__all__ = sorted(_HOMES)
__getattr__ = names_on_first_use(__name__, _HOMES)
