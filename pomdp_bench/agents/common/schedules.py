"""Constant and linear schedules for learning rates and clip ranges.

A schedule maps the fraction of training that remains, ``progress_remaining``
(1 at the start, 0 at the end), to a value, as in Stable-Baselines3. Settings
accept a float, a :class:`LinearSchedule`, or rl-zoo3's string ``"lin_<start>"``;
each has a plain-data form (:func:`schedule_to_data`) so a saved agent can
rebuild it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConstantSchedule:
    """Always ``value``."""

    value: float

    def __call__(self, progress_remaining: float) -> float:
        return self.value


@dataclass(frozen=True)
class LinearSchedule:
    """From ``start`` (progress_remaining = 1) linearly to ``end`` (progress_remaining = 0)."""

    start: float
    end: float = 0.0

    def __call__(self, progress_remaining: float) -> float:
        return self.end + progress_remaining * (self.start - self.end)


Schedule = ConstantSchedule | LinearSchedule
ScheduleLike = float | int | str | dict | ConstantSchedule | LinearSchedule


def as_schedule(name: str, value: ScheduleLike) -> Schedule:
    """Turn a setting into a schedule.

    Args:
        name: the setting's name, for error messages.
        value: a number (constant), ``"lin_<start>"`` (rl-zoo3's linear decay to
            0), a ``{"linear": start}``, ``{"linear": [start, end]}`` or
            ``{"constant": v}`` dict, or a schedule.

    Raises:
        ValueError: for anything else, naming the value.
    """
    if isinstance(value, (ConstantSchedule, LinearSchedule)):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number or a schedule, got {value!r}")
    if isinstance(value, (int, float)):
        return ConstantSchedule(float(value))
    if isinstance(value, str) and value.startswith("lin_"):
        try:
            return LinearSchedule(float(value[len("lin_") :]))
        except ValueError:
            pass
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "linear" and isinstance(arg, (list, tuple)) and len(arg) == 2:
            return LinearSchedule(float(arg[0]), float(arg[1]))
        if kind == "linear":
            return LinearSchedule(float(arg))
        if kind == "constant":
            return ConstantSchedule(float(arg))
    raise ValueError(
        f"{name}={value!r} is not a schedule: use a number, 'lin_<start>' (linear to 0), "
        f"{{'linear': start}} or a LinearSchedule"
    )


def schedule_to_data(schedule: Schedule) -> Any:
    """The plain-data form of ``schedule`` that :func:`as_schedule` reads back."""
    if isinstance(schedule, ConstantSchedule):
        return schedule.value
    if schedule.end == 0.0:
        return f"lin_{schedule.start!r}"
    return {"linear": [schedule.start, schedule.end]}
