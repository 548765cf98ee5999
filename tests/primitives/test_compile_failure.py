"""``tnpx.compile_failure``: why torch.compile failed, in one line."""

from __future__ import annotations

from tnpx.compile_failure import compile_failure


class Wrapper(Exception):
    def __init__(self, inner: Exception):
        super().__init__("dynamo's long wrapper text\nwith many lines")
        self.inner_exception = inner


def test_the_backends_own_error_first_line():
    err = Wrapper(RuntimeError("\n  no C compiler found\n(details)"))
    assert compile_failure(err) == "RuntimeError:   no C compiler found"


def test_a_cause_or_the_error_itself():
    try:
        raise ValueError("outer") from OSError("the cause")
    except ValueError as err:
        assert compile_failure(err) == "OSError: the cause"
    assert compile_failure(KeyError("k")) == "KeyError: 'k'"
    assert len(compile_failure(RuntimeError("x" * 1000))) == 300
