"""Random uint8 image arrays ``[n, h, w, c]`` shared by the image tests
(``tests/data/test_images*.py``, ``tests/plot/test_images_plot.py``)."""

from __future__ import annotations

import numpy as np


def random_images(n=12, h=28, w=28, c=1, seed=0, low=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, 256, (n, h, w, c), dtype=np.uint8)
