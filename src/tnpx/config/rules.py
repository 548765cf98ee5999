"""Allowed values of config fields, declared beside the fields and checked when a config is
built, so a bad value fails at once with the key, the value and what is allowed (e.g.
``train.steps = -5: must be an integer >= 1``) instead of deep inside training.

A field declares its rule with :func:`ruled`; :func:`rule_of` reads it back.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

RULE = "tnpx_rule"  # the dataclass field metadata key


class ConfigError(ValueError):
    """A config key is unknown, or a value has the wrong type or is out of its range."""


@dataclass(frozen=True)
class Rule:
    """A test on a value and the words saying what passes (after "must be ...")."""

    test: Callable[[object], bool]
    allowed: str

    def problem(self, value: object) -> str | None:
        """None if ``value`` passes, else ``"must be <allowed>"``."""
        return None if self.test(value) else f"must be {self.allowed}"


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def at_least(low: int) -> Rule:
    """An integer ``>= low`` (counts, sizes, step intervals)."""
    return Rule(lambda v: _integer(v) and v >= low, f"an integer >= {low}")


def positive() -> Rule:
    """A finite number ``> 0`` (rates, clipping thresholds)."""
    return Rule(lambda v: _number(v) and 0 < v < float("inf"), "a number > 0")


def non_negative() -> Rule:
    return Rule(lambda v: _number(v) and 0 <= v < float("inf"), "a number >= 0")


def fraction(high_open: bool = False) -> Rule:
    """A number in ``[0, 1]`` (or ``[0, 1)``)."""
    if high_open:
        return Rule(lambda v: _number(v) and 0 <= v < 1, "a number in [0, 1)")
    return Rule(lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]")


def one_of(*options: str, fold_case: bool = False) -> Rule:
    def test(v: object) -> bool:
        return isinstance(v, str) and (v.lower() if fold_case else v) in options

    return Rule(test, f"one of {', '.join(options)}")


def precision_name(options: tuple[str, ...]) -> Rule:
    """One of ``options``, where a whole number stands for its digits (YAML reads
    ``precision: 32`` as the number 32)."""

    def test(v: object) -> bool:
        return (isinstance(v, str) or _integer(v)) and str(v) in options

    return Rule(test, f"one of {', '.join(options)}")


def optional(rule: Rule) -> Rule:
    """``rule``, or None (``null`` in YAML) meaning "off"."""
    return Rule(lambda v: v is None or rule.test(v), f"{rule.allowed} or null")


def adam_betas() -> Rule:
    """Adam's two averaging factors, each in ``[0, 1)``."""

    def test(v: object) -> bool:
        return isinstance(v, list) and len(v) == 2 and all(fraction(True).test(b) for b in v)

    return Rule(test, "two numbers in [0, 1), e.g. [0.9, 0.999]")


def positive_values() -> Rule:
    """A mapping whose every value is a number > 0 (``optim.lr_multipliers``)."""

    def test(v: object) -> bool:
        return isinstance(v, dict) and all(positive().test(x) for x in v.values())

    return Rule(test, "a mapping of parameter-name prefixes to numbers > 0")


def non_empty() -> Rule:
    return Rule(lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string")


def device_name() -> Rule:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    pattern = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
    return Rule(
        lambda v: isinstance(v, str) and pattern.fullmatch(v) is not None,
        "auto, cpu, cuda, cuda:N or mps",
    )


def ruled(rule: Rule, default=dataclasses.MISSING, default_factory=dataclasses.MISSING):
    """A dataclass field carrying ``rule`` (checked by the config builder)."""
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata={RULE: rule}
    )


def rule_of(f: dataclasses.Field) -> Rule | None:
    return f.metadata.get(RULE)
