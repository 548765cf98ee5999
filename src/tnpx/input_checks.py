"""Input checks at the model boundary: every error names the argument, what was received
and what was expected.

Two kinds of check: of shapes, dtypes and devices (they read no values, cost nothing and run
on every call), and of values (NaN, Inf, magnitude: :func:`check_magnitude`). A value check
reads the tensor on the host, a device synchronisation on a GPU, so it runs only where values
exist and may be untrusted (:func:`values_checked`): not for tensors without values (the
``meta`` device, ``FakeTensorMode``: tracing, compiling) and not inside :func:`trusted_values`,
which a training step enters for the batches its task sampler drew.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import torch
from torch._subclasses.fake_tensor import is_fake

# True inside `trusted_values()`: the caller vouches for the values of the tensors it passes.
_TRUSTED = contextvars.ContextVar("tnpx_trusted_values", default=False)


@contextmanager
def trusted_values() -> Iterator[None]:
    """Skip the value checks (NaN, Inf, magnitude) of model calls inside the block; shape,
    dtype and device are still checked.

    For batches whose values were made or checked already: the training step enters it for
    the batches of its task sampler (synthetic draws, or a data source that checked its files),
    so a step does not synchronise the device on the inputs of every forward. A NaN that still
    reached the loss would stop training at the non-finite guard (:mod:`tnpx.training.guard`).
    """
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def has_values(t: torch.Tensor) -> bool:
    """Whether ``t`` holds values that can be read: False on the ``meta`` device and for a
    fake tensor (``FakeTensorMode``), which carry only shape, dtype and device."""
    return t.device.type != "meta" and not is_fake(t)


def values_checked(*tensors: torch.Tensor) -> bool:
    """Whether a model call checks the values of ``tensors``: outside :func:`trusted_values`
    and where every one of them has values (:func:`has_values`)."""
    return not _trusted() and all(has_values(t) for t in tensors)


@torch.compiler.assume_constant_result
def _trusted() -> bool:
    """Whether the caller is inside :func:`trusted_values`. ``torch.compile`` cannot trace a
    ``ContextVar``: it evaluates this once when it traces and keeps the answer (a graph traced
    inside the block, as ``train.compile``'s, has no value checks; one traced outside has)."""
    return _TRUSTED.get()


def max_abs_input(dtype: torch.dtype) -> float:
    """The largest ``|value|`` a model takes in ``dtype``: ``10^floor(log10(max) / 4)`` with
    ``max`` the dtype's largest finite number: 1e9 in float32 and bfloat16, 1e77 in float64,
    10 in float16.

    Why the fourth root: a model's activations grow linearly with its inputs (Linear layers,
    ReLU MLPs) and its arithmetic raises them to powers: squares in LayerNorm's variance, in
    attention logits ``q . k`` and in a variance of the outputs; the fourth power in TNP-ND's
    covariance ``L L^T`` with ``L`` built from ``F F^T``. An input whose fourth power is finite
    keeps all of them finite. Measured (``benchmarks/input_bound.py``: every registered model
    at its default and the tests' small sizes, and the shipped models, inputs and outputs of
    each magnitude), the first non-finite prediction comes at 1e12 in float32 and bfloat16
    (TNP-ND; the other transformers at 1e21), at 1e82 in float64 (scanned every fifth power)
    and at 1e2 in float16 (ConvCNP is not finite in float16 even on its training domain, a
    problem of its own): every model is finite at the bound, with a factor of 10 (float16) to
    1000 or more to spare. Values this large are far outside any training domain anyway.
    """
    exponent = math.floor(math.log10(torch.finfo(dtype).max) / 4)
    return 10.0**exponent


def check_magnitude(name: str, t: torch.Tensor) -> None:
    """Raise ``ValueError`` naming ``name`` and the first entry that is NaN, Inf or beyond
    :func:`max_abs_input` of ``t``'s dtype (where the model's arithmetic would overflow)."""
    bound = max_abs_input(t.dtype)
    inside = t.abs() <= bound  # False for NaN too
    if bool(inside.all()):
        return
    finite = torch.isfinite(t)
    if not bool(finite.all()):
        bad = (~finite).nonzero()[0].tolist()
        raise ValueError(
            f"{name}: contains NaN or Inf (first at index {bad}); "
            "mask missing context values with mask_c instead"
        )
    bad = (~inside).nonzero()[0].tolist()
    raise ValueError(
        f"{name}: value {t[tuple(bad)].item():.3g} at index {bad} is beyond +-{bound:.0e}, the "
        f"largest a {str(t.dtype).removeprefix('torch.')} model takes (its arithmetic raises "
        "activations to powers up to 4 and would overflow); rescale the data towards the "
        "model's training domain"
    )


def _shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def check_tensor(
    name: str,
    t,
    expected: str | Callable[[], str],
    dim_last: int | None,
    batch: int | None = None,
    n: int | None = None,
) -> None:
    """Check rank 3, batch size, set size and feature size of one input. ``expected``, the
    shape for the message, may be a function that writes it: only an error formats it, so
    ``torch.compile`` keeps the sizes symbolic (formatting one fixes it to its value)."""
    if callable(expected):
        if not _shape_ok(t, dim_last, batch, n):
            check_tensor(name, t, expected(), dim_last, batch, n)
        return
    if not isinstance(t, torch.Tensor):
        raise ValueError(
            f"{name}: expected a torch.Tensor of shape {expected}, got {type(t).__name__}"
        )
    if t.dim() != 3:
        raise ValueError(f"{name}: expected shape {expected} (3 dimensions), got {_shape(t)}")
    if not t.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if batch is not None and t.shape[0] != batch:
        raise ValueError(f"{name}: expected shape {expected} with batch {batch}, got {_shape(t)}")
    if n is not None and t.shape[1] != n:
        raise ValueError(f"{name}: expected shape {expected} with {n} points, got {_shape(t)}")
    if dim_last is not None and t.shape[2] != dim_last:
        raise ValueError(
            f"{name}: expected shape {expected} (model built for {dim_last} features), "
            f"got {_shape(t)}"
        )


def _shape_ok(t, dim_last: int | None, batch: int | None, n: int | None) -> bool:
    """Whether :func:`check_tensor` would pass ``t`` (without writing its message)."""
    return (
        isinstance(t, torch.Tensor)
        and t.dim() == 3
        and t.is_floating_point()
        and all(
            want is None or t.shape[i] == want for i, want in ((0, batch), (1, n), (2, dim_last))
        )
    )


def validate_inputs(
    xc: torch.Tensor,
    yc: torch.Tensor,
    xt: torch.Tensor,
    mask_c: torch.Tensor | None,
    dim_x: int,
    dim_y: int,
    dtype: torch.dtype | None,
    device: torch.device | None,
    bounded: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Validate a model call and return the inputs with masked-out context entries zeroed.

    Shape, dtype and device are checked always; values (NaN, Inf, magnitude) where
    :func:`values_checked` says so (not on ``meta`` or fake tensors, not inside
    :func:`trusted_values`).

    Masked-out context entries (``mask_c`` False) may hold anything, NaN included: they are
    replaced by zeros so that they cannot leak into the computation. Observed values must be
    within ``+-max_abs_input(dtype)`` (1e9 in float32, 1e77 in float64), where every model's
    prediction stays finite; ``bounded=False`` skips that bound (to probe past it).

    Raises:
        ValueError: wrong type, rank, batch, set or feature size; dtype or device mismatch
            with the model; NaN or Inf in an observed value, or one beyond the bound.
    """
    check_tensor("xc", xc, f"[batch, n_ctx, {dim_x}]", dim_x)
    b, n_ctx = xc.shape[:2]
    check_tensor("yc", yc, lambda: f"[{b}, {n_ctx}, {dim_y}]", dim_y, b, n_ctx)
    check_tensor("xt", xt, lambda: f"[{b}, n_tgt, {dim_x}]", dim_x, b)
    if mask_c is not None:
        if not isinstance(mask_c, torch.Tensor) or mask_c.dtype != torch.bool:
            got = mask_c.dtype if isinstance(mask_c, torch.Tensor) else type(mask_c).__name__
            raise ValueError(f"mask_c: expected a bool tensor of shape [{b}, {n_ctx}], got {got}")
        if tuple(mask_c.shape) != (b, n_ctx):
            raise ValueError(f"mask_c: expected shape [{b}, {n_ctx}], got {_shape(mask_c)}")
    for name, t in (("xc", xc), ("yc", yc), ("xt", xt), ("mask_c", mask_c)):
        if t is None:
            continue
        if device is not None and t.device != device:
            raise ValueError(f"{name}: expected device {device} (the model's), got {t.device}")
        if dtype is not None and name != "mask_c" and t.dtype != dtype:
            raise ValueError(f"{name}: expected dtype {dtype} (the model's), got {t.dtype}")
    if mask_c is not None:
        keep = mask_c[..., None]
        xc = torch.where(keep, xc, torch.zeros((), dtype=xc.dtype, device=xc.device))
        yc = torch.where(keep, yc, torch.zeros((), dtype=yc.dtype, device=yc.device))
    if not values_checked(xc, yc, xt):
        return xc, yc, xt, mask_c
    for name, t in (("xc", xc), ("yc", yc), ("xt", xt)):
        if bounded:
            check_magnitude(name, t)
        elif not torch.isfinite(t).all():
            check_magnitude(name, t.masked_fill(torch.isfinite(t), 0))  # names the NaN / Inf
    return xc, yc, xt, mask_c


def check_option(name: str, value: object, options: Iterable[str]) -> None:
    """Raise ``ValueError`` naming ``name``, the allowed ``options`` and ``value`` unless
    ``value`` is one of them."""
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


__all__ = [
    "check_magnitude",
    "check_option",
    "check_tensor",
    "has_values",
    "max_abs_input",
    "trusted_values",
    "validate_inputs",
    "values_checked",
]
