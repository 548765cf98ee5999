"""Why ``torch.compile`` failed, in one line: the backend's own error (a C compiler missing,
an operation it cannot lower), not dynamo's wrapper around it. Compiled inference
(:mod:`tnpx.apply.compiled`) and the compiled training step (:mod:`tnpx.training.compiled`)
both fall back to eager code and say so with it."""

from __future__ import annotations


def compile_failure(err: BaseException) -> str:
    """``"ErrorType: first line of its message"`` (at most 300 characters) of what ``err``
    wraps, or of ``err`` itself."""
    cause = getattr(err, "inner_exception", None) or err.__cause__ or err
    lines = [line for line in str(cause).splitlines() if line.strip()]
    return f"{type(cause).__name__}: {lines[0] if lines else ''}"[:300]
