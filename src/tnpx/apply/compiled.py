"""Compiled inference: ``torch.compile`` for the small-N regime, where an eager forward is
dominated by per-operation overhead (Python dispatch on a CPU, kernel launches on a GPU),
not arithmetic.

``compile_for_inference(model)`` returns a callable with the model's contract
(``compiled(xc, yc, xt, mask_c=None)`` -> the model's predictive distribution). Inputs are
validated eagerly, exactly as ``model(...)`` does; the prediction runs through
``torch.compile``: on CUDA in ``reduce-overhead`` mode (CUDA graphs: one launch replays the
whole forward), elsewhere in the default mode (inductor's fused C++ kernels; needs a C
compiler). Shapes are specialised: each new (batch, n_ctx, n_tgt) compiles once more, so
compile for a fixed workload (serving, benchmarking, BO candidate sets), not for training.

When compilation is not possible (no compiler, an operation the backend cannot lower), the
first call warns once and every call falls back to the eager model, with the same results.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from torch.distributions import Distribution, Normal

from ..compile_failure import compile_failure
from ..models.base import NeuralProcess

CUDA_MODE = "reduce-overhead"  # CUDA graphs
CPU_MODE = "default"


def default_mode(device: torch.device) -> str:
    """The ``torch.compile`` mode for inference on ``device``."""
    return CUDA_MODE if device.type == "cuda" else CPU_MODE


class CompiledModel:
    """Inference-only compiled view of a model (weights shared, not copied).

    Attributes:
        model: the eager model (put in eval mode).
        mode: the ``torch.compile`` mode in use.
        fallback_reason: why calls run eagerly, or None while compiled code runs.
    """

    def __init__(
        self,
        model: NeuralProcess,
        mode: str | None = None,
        backend: str | Callable = "inductor",
    ):
        if not isinstance(model, NeuralProcess):
            raise TypeError(f"compile_for_inference needs a tnpx model, got {type(model)}")
        self.model = model.eval()
        self.device = model.device or torch.device("cpu")
        self.mode = mode or default_mode(self.device)
        self._cuda_graphs = self.device.type == "cuda" and self.mode in (
            "reduce-overhead",
            "max-autotune",
        )
        options = {"backend": backend, "dynamic": False}
        if backend == "inductor":
            options["mode"] = self.mode
        self._compiled = torch.compile(model._predict_centred, **options)
        self.fallback_reason: str | None = None

    def __call__(
        self,
        xc: torch.Tensor,
        yc: torch.Tensor,
        xt: torch.Tensor,
        mask_c: torch.Tensor | None = None,
    ) -> Distribution:
        """``model(xc, yc, xt, mask_c)``: ``xc [batch, n_ctx, dim_x]``, ``yc [batch, n_ctx,
        dim_y]``, ``xt [batch, n_tgt, dim_x]``, ``mask_c [batch, n_ctx]``; no gradients."""
        xc, yc, xt, mask_c = self.model._validate(xc, yc, xt, mask_c)
        with torch.no_grad():
            if self.fallback_reason is None:
                try:
                    return self._run_compiled(xc, yc, xt, mask_c)
                except torch._dynamo.exc.TorchDynamoException as err:
                    self._fall_back(err)
            return self.model._predict_centred(xc, yc, xt, mask_c)

    def _run_compiled(self, xc, yc, xt, mask_c) -> Distribution:
        if not self._cuda_graphs:
            return self._compiled(xc, yc, xt, mask_c)
        # A CUDA graph writes every replay's outputs into the same buffers: copy them out, so
        # a prediction the caller keeps is not overwritten by the next call.
        torch.compiler.cudagraph_mark_step_begin()
        pred = self._compiled(xc, yc, xt, mask_c)
        if type(pred) is not Normal:
            raise TypeError(
                f"{self.model.name}: CUDA-graph inference supports Normal predictions, got "
                f"{type(pred).__name__}; pass mode='default'"
            )
        return Normal(pred.loc.clone(), pred.scale.clone(), validate_args=False)

    def _fall_back(self, err: Exception) -> None:
        self.fallback_reason = compile_failure(err)
        warnings.warn(
            f"{self.model.name}: torch.compile failed ({self.fallback_reason}); running eagerly",
            RuntimeWarning,
            stacklevel=3,
        )


def compile_for_inference(
    model: NeuralProcess, mode: str | None = None, backend: str | Callable = "inductor"
) -> CompiledModel:
    """A compiled, inference-only callable with ``model``'s contract (see the module doc).

    Args:
        model: any tnpx model; it is put in eval mode.
        mode: ``torch.compile`` mode; default ``reduce-overhead`` (CUDA graphs) on CUDA,
            ``default`` elsewhere.
        backend: ``torch.compile`` backend (``inductor``; ``eager``/``aot_eager`` to debug).
    """
    return CompiledModel(model, mode=mode, backend=backend)
