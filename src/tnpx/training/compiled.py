"""A compiled training step (``train.compile: true``): the step's forward and loss through
``torch.compile``.

What is compiled is the objective, ``model.training_loss(batch)`` as a module (inside DDP's
wrapper when there are several processes: compiled after wrapping, as torch advises, so
that DDP's optimiser splits the graph at its gradient buckets). AOTAutograd traces the
backward with it, so the backward runs compiled too. Gradient clipping, the optimiser step,
the schedule and the non-finite guard stay eager. The step enters ``trusted_values`` before
the compiled call, so no value check breaks the graph
(``tests/primitives/test_input_checks.py``).

Dynamic shapes: the number of context points changes every batch (and with some sources the
number of targets). The objective is compiled with ``dynamic=True``: every size is a symbol
from the first call, so one graph serves all context sizes instead of one compile per size.
Torch still specialises on sizes 0 and 1 and on sizes a model branches on, so a run compiles
a few graphs at most, not one per step (``tests/training/test_compiled_step.py`` counts
them); past dynamo's recompile limit a frame runs eagerly, with torch's warning.

The compiled loss is the eager loss up to float rounding (fused kernels reorder sums), so a
compiled run is not bit for bit an eager one, and a run resumed with the other setting
continues on slightly different numbers. When compilation fails (no C compiler, an
operation the backend cannot lower), the step warns once and runs eagerly from then on.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..batch import Batch
from ..compile_failure import compile_failure
from ..user_files import warn_user

# inductor: fused C++ kernels on a CPU, Triton on a GPU (tests use the faster-to-build
# "eager"/"aot_eager" to count graphs)
BACKEND = "inductor"


class CompiledObjective:
    """``objective(batch)`` through ``torch.compile(dynamic=True)`` (``backend``: default
    :data:`BACKEND`), falling back to the eager ``objective`` if compilation fails.

    Attributes:
        eager: the objective as given (a module whose forward is the training loss).
        fallback_reason: why calls run eagerly, or None while compiled code runs.
    """

    def __init__(self, objective: torch.nn.Module, backend: str | Callable | None = None):
        self.eager = objective
        self.compiled = torch.compile(objective, dynamic=True, backend=backend or BACKEND)
        self.fallback_reason: str | None = None

    def __call__(self, batch: Batch) -> torch.Tensor:
        """The training loss of ``batch`` (a 0-d tensor)."""
        if self.fallback_reason is None:
            try:
                return self.compiled(batch)
            except torch._dynamo.exc.TorchDynamoException as err:
                self.fallback_reason = compile_failure(err)
                warn_user(
                    f"train.compile: torch.compile failed ({self.fallback_reason}); "
                    "training eagerly (set train.compile=false to skip the attempt)"
                )
        return self.eager(batch)
