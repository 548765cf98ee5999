"""nn/setconv.py: the grid box a ConvCNP task's set convolution lays its grid on.

Split from ``tests/test_convcnp_rcnp.py``."""

from __future__ import annotations

import torch

from tnpx.nn import grid_box


def test_grid_box_covers_points_with_margin():
    x = torch.tensor([[[-0.3], [1.2], [5.0]], [[0.0], [0.0], [0.0]]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    start, size = grid_box(x, mask, points_per_unit=10, margin=0.25, multiple=8)
    assert start[0].item() == -3 - 3  # floor(-3.0) minus ceil(2.5) points of margin
    assert size[0].item() % 8 == 0 and (start[0] + size[0] - 1).item() >= 12 + 3
    assert size[1].item() == 0  # no observed point: an empty box


def test_a_point_a_rounding_off_a_lattice_point_counts_as_on_it():
    # 10 points per unit: 0.3 and 3.3 are on the lattice, but float32 scales them to
    # 3.0000001 and 32.999999; floor/ceil used to give boxes one cell apart for the two.
    ppu = 10.0
    x = torch.tensor([[[0.3], [1.0]], [[3.3], [4.0]]])
    start, size = grid_box(x, None, ppu, margin=0.5, multiple=4)
    assert start.tolist() == [[3 - 5], [33 - 5]]  # the shift by 30 cells moves the box by 30
    assert torch.equal(size[0], size[1])
    on = torch.tensor([[[0.5, -1.2], [1.5, 0.7]]], dtype=torch.float64)  # 2D, on the lattice
    exact, n_exact = grid_box(on, None, ppu, margin=0.0)
    for side in (-1, 1):  # a few float roundings either side of those lattice points
        s, n = grid_box(on * (1 + side * 1e-14), None, ppu, margin=0.0)
        assert torch.equal(s, exact) and torch.equal(n, n_exact)


def test_a_point_inside_a_cell_still_gets_its_own_floor_and_ceil():
    x = torch.tensor([[[0.26], [0.74]]])  # 2.6 and 7.4 cells: well away from the lattice
    start, size = grid_box(x, None, 10.0, margin=0.0)
    assert start.item() == 2 and size.item() == 8 - 2 + 1


def test_points_far_from_the_origin_stay_inside_their_box():
    # At 1e9 a float32 step spans ~2,000 cells: the snap must not shrink the box past them.
    x = torch.tensor([[[1e9], [1e9 + 4096.0]]])
    start, size = grid_box(x, None, 16.0, margin=0.0)
    scaled = (x[0, :, 0].double() * 16).tolist()
    assert size.item() > 0 and start.item() <= min(scaled)
    assert start.item() + size.item() - 1 >= max(scaled)
