"""Tolerances and the comparison of two predictions shared by the model-contract tests
(``tests/contract/test_contract*.py``)."""

from __future__ import annotations

from torch.testing import assert_close

ATOL = 1e-5
RTOL = 1e-4


def assert_same_prediction(p, q, atol=ATOL, rtol=RTOL):
    assert_close(p.mean, q.mean, atol=atol, rtol=rtol)
    assert_close(p.stddev, q.stddev, atol=atol, rtol=rtol)
