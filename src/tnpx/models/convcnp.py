"""Convolutional CNP (Gordon et al., 2020) on 1D and 2D inputs, with the TE paper's UNet (F.1).

1. Set convolution of the context onto a uniform grid: a density channel and the data channel
   normalised by it (Gordon et al. Eq. 4), RBF weights with a learned length scale per input
   dimension.
2. A CNN on the grid: the TE paper's UNet (default: 11 layers, 128 channels, kernel 9) or a
   plain CNN.
3. Set convolution from the grid to each target (Eq. 5, its own learned length scale), then a
   pointwise MLP (``n_decoder_hidden = 0``: a linear map) to the likelihood.

The grid. Points lie on the lattice ``h Z^dim_x``, ``h = 1 / points_per_unit``. Each task gets
its own box of that lattice, covering its observed context plus ``margin`` on every side
(``start = floor((min - margin) / h)``, up to rounding ``margin`` to whole points; an
extreme within a rounding of a lattice point counts as on it: ``tnpx.nn.setconv.grid_box``),
its length per axis padded at the far end to a multiple of ``2^pools`` so the UNet can pool.
The boxes of a batch share one tensor, each starting at index 0, and the CNN keeps them apart
(:mod:`tnpx.nn.cnn`), so:

- translation equivariance is exact for shifts that are multiples of the grid spacing ``h``
  (the box moves with the data, up to float rounding); other shifts change the discretisation
  and hold only approximately;
- the grid follows the data wherever it lies (inputs near x = 500 need no larger grid);
- a task's prediction does not depend on the other tasks in its batch, on padding, or on the
  other targets: targets do not shape the grid. A target beyond the box reads the CNN output
  with RBF weights that decay to zero, so far from the context the prediction becomes the
  empty-context prior ``decoder(0)``. Set ``margin`` to cover the distance from the context at
  which targets should still see it. ``grid="union"`` instead sizes each box to the context and
  the targets, as in Gordon et al.'s code; predictions then depend on the other targets.

A fixed grid (``grid="fixed"``, the authors' codes): ``grid_points`` points per axis from
``grid_min`` to ``grid_max`` (both included; ``grid_points=None``: ``int(points_per_unit *
(grid_max - grid_min))``, the TNP-KR code's rule), the same for every task. Context outside it
reaches the grid only through the RBF tails, and the CNN's zero padding sits at its fixed ends,
so no shift is exactly equivariant: shifts by multiples of the spacing that keep the data
(and the CNN's receptive field) well inside the grid change the prediction only by the edge
effects, shifts that move the data out of it by O(1). Such a model reports
``translation_equivariant = False``.

Set-convolution and CNN options (defaults as above; presets below): per-channel length scales
(``setconv_scales``), a softplus length scale (``setconv_transform``), fixed length scales
(``setconv_trainable=False``: on a fixed grid on the pixels with a tenth of a pixel, the TE
code's gridded ConvCNP for images), the density channel appended and unnormalised
(``density``), a density channel in the read-out
(``readout_density``), pointwise maps after the encoder and the read-out
(``n_grid_encoder_hidden``, ``n_readout_hidden``: None = none, 0 = linear, k = an MLP with k
hidden layers of ``dim_model``), and the CNN (``cnn``: ``unet``, ``plain``, ``preact``, or
``resnet``, with ``batch_norm`` statistics ``batch`` or ``frozen``: :mod:`tnpx.nn.batch_norm`).

Presets (``docs/fidelity.md``): ``kr-code``, the TNP-KR paper's ConvCNP (MLGlobalHealth/dl4bi
``dl4bi/meta_regression/convcnp.py``, 1D); ``te-code``, cambridge-mlg/tnp
``experiments/configs/models/convcnp.yml`` (the TE paper's released config; with a fixed grid on
the canvas pixels and fixed length scales, cambridge-mlg/tetnp ``gridded-convcnp.yml``, TE-2).

Cost: a box has about ``((range + 2 margin) * points_per_unit)^dim_x`` points; in 2D, inputs in
[-2, 2]^2 at 64 points per unit with margin 1 give 384^2 grid points per task, each with
``dim_model`` channels in every UNet layer: 7-37 s for one forward of 5 context points on one
thread. So ``points_per_unit`` defaults by dimension (:data:`DEFAULT_POINTS_PER_UNIT`): 64 in 1D,
as the papers (ConvCNP's 1D GP experiments, TNP-KR's dl4bi ``kr-code`` preset), and 16 in 2D
(a 96^2 grid: ~0.45 s for that forward with the default 128-channel UNet, measured on a busy
2-core machine). The papers' 2D experiments use on-the-grid image pixels (TE-2's ``te-code``
preset: a fixed grid on the canvas) or the thesis' 6 points per unit with a plain 4-layer CNN
(``configs/th-linear-*convcnp*``), and those configs set their grids explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..nn import (
    MLP,
    STATISTICS,
    SetConvFromGrid,
    SetConvToGrid,
    build_grid_cnn,
    check_option,
    grid_box,
    map_target_chunks,
)
from .base import HeadHyper, NeuralProcess, RawContext, likelihood_head
from .registry import register
from .sizes import zero_allowed

GRIDS = ("context", "union", "fixed")
SETCONV_SCALES = ("per-dim", "per-channel")


@dataclass
class GridState:
    """A ConvCNP's encoded context: the CNN's grid features ``[b, c, *shape]`` (None where no
    task has a context point), each task's grid origin ``start`` and box ``valid [b, 1,
    *shape]`` (None: every box fills the grid)."""

    features: torch.Tensor | None
    start: torch.Tensor
    valid: torch.Tensor | None = None


@dataclass
class ConvCNPHyper(HeadHyper):
    dim_model: int = 128  # CNN channels C
    n_layers: int = 11
    kernel_size: int = 9
    points_per_unit: float | None = None  # None: DEFAULT_POINTS_PER_UNIT for dim_x
    margin: float = 1.0  # grid beyond the context, in input units, on every side
    cnn: str = "unet"  # unet | plain | preact | resnet
    grid: str = "context"  # context | union (context and targets) | fixed
    n_decoder_hidden: int = 2
    # bound on batch * chunk * dim_model * grid length in an einsum read-out (the fused 1D
    # per-channel read-out, nn/setconv_channels.py, bounds its own blocks)
    chunk_elements: int = 2**26
    grid_min: float | None = None  # grid="fixed": first grid point on every axis
    grid_max: float | None = None  # grid="fixed": last grid point on every axis
    grid_points: int | None = None  # grid="fixed": per axis; None: ppu * (max - min)
    setconv_scales: str = "per-dim"  # per-dim | per-channel: the set convs' length scales
    setconv_transform: str = "exp"  # exp | softplus (1e-5 + softplus(raw))
    init_length_scale: float | None = None  # None: two grid spacings
    # False: the set convolutions' length scales stay at init_length_scale. At a tenth of the
    # spacing of a fixed grid on the pixels, each pixel reads only its own grid point (a
    # neighbour's weight is exp(-50)): the TE code's GriddedConvCNP (TE-2's te-code row).
    setconv_trainable: bool = True
    density: str = "normalised"  # normalised [density, data / density] | appended [data, density]
    readout_density: bool = False  # the read-out carries a normalising density channel
    # maps on the grid before the CNN and after the read-out (None: none; 0 hidden layers: a
    # linear map, the TNP-KR code's Dense layers)
    n_grid_encoder_hidden: int | None = zero_allowed(None)
    n_readout_hidden: int | None = zero_allowed(None)
    batch_norm: str = "batch"  # batch | frozen (cnn="resnet")


# The grid's density when a config does not set it (module docstring, "Cost").
DEFAULT_POINTS_PER_UNIT = {1: 64.0, 2: 16.0}


@register("convcnp")
class ConvCNP(NeuralProcess):
    """ConvCNP: set convolution to a grid, CNN, set convolution to the targets (Gordon et al.).

    Translation equivariant: exact for shifts that are multiples of the grid spacing
    ``1 / points_per_unit`` (see the module docstring). With ``grid="fixed"`` (the presets
    ``kr-code`` and ``te-code``) not exactly for any shift: shifts by multiples of the spacing
    that keep the data well inside the grid change the prediction only by edge effects, and the
    instance reports ``translation_equivariant = False``. ``dim_x`` must be 1 or 2.
    """

    Hyper = ConvCNPHyper
    summary = "ConvCNP: set-conv to a grid with density channel, UNet, set-conv to targets"
    translation_equivariant = True
    equivariance_note = (
        "grid-exact: shifts by multiples of 1/points_per_unit; with grid='fixed' (presets "
        "kr-code, te-code) approximate only, for shifts keeping the data inside the grid"
    )
    dim_x_range = (1, 2)  # a grid in more dimensions is too costly

    def __init__(self, dim_x: int, dim_y: int, hyper: ConvCNPHyper):
        if hyper.points_per_unit is None:  # resolved here, so a checkpoint stores the number
            hyper = replace(hyper, points_per_unit=DEFAULT_POINTS_PER_UNIT.get(dim_x, 16.0))
        super().__init__(dim_x, dim_y, hyper)
        h = hyper
        check_option("grid", h.grid, GRIDS)
        check_option("setconv_scales", h.setconv_scales, SETCONV_SCALES)
        check_option("batch_norm", h.batch_norm, STATISTICS)
        if h.points_per_unit <= 0 or h.margin < 0:
            raise ValueError(
                f"points_per_unit must be > 0 and margin >= 0, got {h.points_per_unit} "
                f"and {h.margin}"
            )
        c = h.dim_model
        self.likelihood = likelihood_head(h, dim_y)
        ppu = self._fixed_grid() if h.grid == "fixed" else h.points_per_unit
        per_channel = h.setconv_scales == "per-channel"
        options = dict(
            init_length_scale=h.init_length_scale,
            transform=h.setconv_transform,
            trainable=h.setconv_trainable,
        )
        self.encoder = SetConvToGrid(
            dim_x, ppu, n_scales=1 + dim_y if per_channel else None, density=h.density, **options
        )
        self.grid_encoder = None if h.n_grid_encoder_hidden is None else (
            MLP(1 + dim_y, c, c, h.n_grid_encoder_hidden)
        )  # fmt: skip
        c_in = 1 + dim_y if self.grid_encoder is None else c
        self.cnn = build_grid_cnn(h.cnn, dim_x, c_in, c, h.n_layers, h.kernel_size, h.batch_norm)
        self.readout_channels = c + h.readout_density
        self.readout = SetConvFromGrid(
            dim_x,
            ppu,
            n_scales=self.readout_channels if per_channel else None,
            density=h.readout_density,
            **options,
        )
        self.readout_map = None if h.n_readout_hidden is None else (
            MLP(self.readout_channels, c, c, h.n_readout_hidden)
        )  # fmt: skip
        c_dec = self.readout_channels if self.readout_map is None else c
        self.decoder = MLP(c_dec, self.likelihood.n_params, c, h.n_decoder_hidden)
        if h.grid == "fixed":
            # not equivariant to any shift (module docstring): the instance says so
            self.translation_equivariant = False
            if self.grid_points % self.cnn.multiple:
                raise ValueError(
                    f"grid_points must be a multiple of {self.cnn.multiple} for this CNN, "
                    f"got {self.grid_points}"
                )

    def _fixed_grid(self) -> float:
        """Checks the fixed grid's options; sets ``grid_points``; returns the grid's points
        per unit ``(grid_points - 1) / (grid_max - grid_min)``."""
        h = self.hyper
        if h.grid_min is None or h.grid_max is None or not h.grid_min < h.grid_max:
            raise ValueError(
                f'grid="fixed" needs grid_min < grid_max, got {h.grid_min} and {h.grid_max}'
            )
        n = h.grid_points or int(h.points_per_unit * (h.grid_max - h.grid_min))
        if n < 2:
            raise ValueError(f"a fixed grid needs at least 2 points per axis, got {n}")
        self.grid_points = n
        return (n - 1) / (h.grid_max - h.grid_min)

    def _inputs(self, x: torch.Tensor) -> torch.Tensor:
        """Inputs relative to the fixed grid's first point (unchanged on a lattice grid)."""
        return x - self.hyper.grid_min if self.hyper.grid == "fixed" else x

    def grid(self, xc, xt, mask_c):
        """Each task's lattice box: ``start [b, dim_x]`` (long), the shared grid ``shape`` (one
        length per axis, 0 when no task has a box) and ``valid [b, 1, *shape]`` marking each
        box (None when every box fills the grid)."""
        if self.hyper.grid == "fixed":
            start = torch.zeros(xc.shape[0], self.dim_x, dtype=torch.long, device=xc.device)
            return start, (self.grid_points,) * self.dim_x, None
        x, mask = xc, mask_c
        if self.hyper.grid == "union":
            x = torch.cat([xc, xt], 1)
            ones = torch.ones(xt.shape[:2], dtype=torch.bool, device=xt.device)
            mask = None if mask_c is None else torch.cat([mask_c, ones], 1)
        h = self.hyper
        start, size = grid_box(x, mask, h.points_per_unit, h.margin, self.cnn.multiple)
        if size.numel() == 0:
            return start, (0,) * self.dim_x, None
        # the grid's shape depends on the data: read it and whether every box fills it at once
        # (one host sync per call on a GPU)
        longest = size.amax(0)
        *shape, full = torch.cat([longest, (size == longest).all().view(1).to(size)]).tolist()
        shape = tuple(shape)
        if max(shape) == 0:
            return start, (0,) * self.dim_x, None
        if full:
            return start, shape, None
        valid = torch.ones(size.shape[0], 1, *shape, dtype=xc.dtype, device=xc.device)
        for d, n in enumerate(shape):
            inside = torch.arange(n, device=xc.device) < size[:, d : d + 1]  # [b, n]
            view = [size.shape[0], 1] + [n if e == d else 1 for e in range(self.dim_x)]
            valid = valid * inside.view(view).to(xc.dtype)
        return start, shape, valid

    def _predict(self, xc, yc, xt, mask_c):
        return self._decode_targets(self._encode_context(xc, yc, mask_c, xt), xt)

    def _encode_context(self, xc, yc, mask_c, xt=None):
        """The CNN's grid features ``z [b, c, *shape]`` and each task's box ``start``. With
        ``grid="union"`` the grid depends on the targets, so streaming keeps the inputs and
        encodes per chunk (the default)."""
        if self.hyper.grid == "union" and xt is None:
            return super()._encode_context(xc, yc, mask_c)
        xt = xc[:, :0] if xt is None else xt
        start, shape, valid = self.grid(xc, xt, mask_c)
        if 0 in shape:  # no context anywhere: every target reads an empty grid
            return GridState(None, start)
        grid = self.encoder(self._inputs(xc), yc, mask_c, start, shape)  # Gordon et al. Eq. 4
        if self.grid_encoder is not None:  # pointwise on the grid: channels last and back
            grid = self.grid_encoder(grid.movedim(1, -1)).movedim(-1, 1)
        return GridState(self.cnn(grid, valid), start, valid)

    def _decode_targets(self, state, xt):
        if isinstance(state, RawContext):  # grid="union": encode with these targets
            return self._predict(state.xc, state.yc, xt, state.mask_c)
        z, start = state.features, state.start
        b, n_tgt = xt.shape[:2]
        c = self.hyper.dim_model
        if z is None:
            features = xt.new_zeros(b, n_tgt, self.readout_channels)
        else:
            chunk = max(1, self.hyper.chunk_elements // max(b * c * z.shape[-1], 1))
            if self.readout.fuses_channels:  # bounds its own memory: no need to chunk targets
                chunk = max(n_tgt, 1)
            args = (z, start) if state.valid is None else (z, start, state.valid)
            features = map_target_chunks(self.readout, self._inputs(xt), chunk, *args)  # Eq. 5
        if self.readout_map is not None:
            features = self.readout_map(features)
        return self.likelihood(self.decoder(features))
