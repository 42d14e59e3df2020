"""Memory length crossed with credit-assignment length: the credit table and its model.

Ni et al. (2023) separate how long a task must remember (the *memory length*: cue to
decision) from how long its reward takes to come back (the *credit length*: decision
to reward). Cue recall sets them apart with ``delay`` and ``reward_delay``
(:mod:`pomdp_bench.envs.cue_recall`), and the ``credit`` suite crosses the two.

- :func:`credit_frame`: one row per cell of a kind trained at several credit lengths:
  its memory length, credit length, solve rate and steps to solve, with intervals.
- :func:`credit_model`: per kind, how the steps to solve grow with each length. A
  Weibull accelerated-failure-time model (``lifelines.WeibullAFTFitter``) of every run's
  steps to solve, a run that did not solve censored at the steps it trained::

      log(steps to solve) = b0 + b_m * memory_length / 10 + b_c * credit_length / 10 + noise

  ``exp(b_m)`` is the factor by which 10 more steps of memory multiply the steps to
  solve (the *time ratio*), ``exp(b_c)`` the same for credit, each with its 95% interval.
  :func:`grows_with` reads the answer off the intervals.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from pomdp_bench.envs.cards import card_of
from pomdp_bench.reporting.statistics import censored_steps

CREDIT_KWARG = "reward_delay"
"""The env keyword that sets the credit length (cue recall's)."""

LENGTH_UNIT = 10
"""Steps of length per unit of the model's covariates: a time ratio is per 10 steps."""

MIN_SOLVED = 3
"""Fewest solved runs a kind needs for :func:`credit_model` to fit it (the model has
three coefficients and a shape; with fewer events it is not identified)."""

PENALIZER = 0.01
"""lifelines' L2 penalty on the model's coefficients: small, so a kind that never solves
at the longest lengths (all its runs there censored) still gets finite estimates."""

CREDIT_COLUMNS: dict[str, tuple[str, str]] = {
    "env_id": ("str", "registered env id"),
    "agent": ("str", "agent"),
    "memory": ("str", "memory kind"),
    "bptt_length": ("int", "pieces trained through (the whole episode in the credit suite)"),
    "memory_length": ("int", "steps from the cue to the decision (the card's memory horizon)"),
    "credit_length": ("int", "steps from the decision to its reward (reward_delay)"),
    "n_seeds": ("int", "runs in the cell"),
    "return_mean": ("float", "mean final return over seeds"),
    "return_ci_low": ("float", "95% t interval of the mean return, low end"),
    "return_ci_high": ("float", "95% t interval of the mean return, high end"),
    "solved_fraction": ("float", "fraction of runs that solved (stop rule)"),
    "solved_ci_low": ("float", "exact (Clopper-Pearson) 95% interval of the solve rate, low end"),
    "solved_ci_high": ("float", "its high end"),
    "steps_to_solve": ("float", "Kaplan-Meier median env steps to solve (empty: later than the runs reach)"),
    "steps_to_solve_ci_low": ("float", "its 95% interval, low end"),
    "steps_to_solve_ci_high": ("float", "its 95% interval, high end (empty: later than the runs reach)"),
    "learned": ("bool", "the cell's verdict: beyond the memoryless ceiling"),
}
"""The columns of ``<suite>_credit.csv``: name to (type, meaning)."""

MODEL_COLUMNS: dict[str, tuple[str, str]] = {
    "env_id": ("str", "registered env id"),
    "agent": ("str", "agent"),
    "memory": ("str", "memory kind"),
    "n_runs": ("int", "runs the model was fitted on"),
    "n_solved": ("int", "of which solved (the rest are censored at the steps they trained)"),
    "memory_ratio": ("float", "factor on the steps to solve per 10 more steps of memory length"),
    "memory_ratio_ci_low": ("float", "its 95% interval, low end"),
    "memory_ratio_ci_high": ("float", "its 95% interval, high end"),
    "credit_ratio": ("float", "factor on the steps to solve per 10 more steps of credit length"),
    "credit_ratio_ci_low": ("float", "its 95% interval, low end"),
    "credit_ratio_ci_high": ("float", "its 95% interval, high end"),
    "grows_with": ("str", "memory, credit, both or neither: which lengths' intervals lie above 1"),
    "note": ("str", "why there is no fit, where there is none"),
}
"""The columns of ``<suite>_credit_model.csv``: name to (type, meaning)."""


def _credit_length(env_id: str, env_kwargs: str) -> float:
    """The ``reward_delay`` of a variant (its kwargs over its card's), NaN if it has none."""
    kwargs = {**card_of(env_id).kwargs, **json.loads(env_kwargs)}
    value = kwargs.get(CREDIT_KWARG)
    return math.nan if value is None else float(value)


def _credit_lengths(frame: pd.DataFrame) -> np.ndarray:
    """``[rows]`` float: each row's credit length (its env variant's ``reward_delay``),
    NaN where the env takes none or is unknown here, or the frame has no ``env_kwargs``."""
    if frame.empty or "env_kwargs" not in frame:
        return np.full(len(frame), math.nan)
    pairs = frame[["env_id", "env_kwargs"]].drop_duplicates()
    lengths = {(e, k): _credit_length(e, k) for e, k in pairs.itertuples(index=False) if _known_env(e)}
    return np.array(
        [lengths.get((e, k), math.nan) for e, k in zip(frame["env_id"], frame["env_kwargs"], strict=True)],
        dtype=np.float64,
    )


def pays_late(frame: pd.DataFrame) -> np.ndarray:
    """``[rows]`` bool: the row's env variant (``env_id``, ``env_kwargs``) pays its reward
    after a credit length above 0. The horizon limit leaves these out: it measures memory
    with the reward at the decision. A frame without ``env_kwargs`` pays nothing late."""
    return np.nan_to_num(_credit_lengths(frame), nan=0.0) > 0


def _with_lengths(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (cells or runs) with ``memory_length`` and ``credit_length``, cut to the
    kinds trained at two or more credit lengths of one env and agent."""
    if frame.empty:
        return frame.assign(memory_length=pd.Series(dtype=float), credit_length=pd.Series(dtype=float))
    frame = frame.assign(memory_length=frame["horizon"].astype(float), credit_length=_credit_lengths(frame))
    frame = frame[frame["credit_length"].notna()]
    spread = frame.groupby(["env_id", "agent", "memory"])["credit_length"].transform("nunique")
    return frame[spread >= 2]


def _known_env(env_id: str) -> bool:
    try:
        card_of(env_id)
    except (KeyError, ValueError):
        return False
    return True


def credit_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """The credit table of a suite's cells (:func:`~pomdp_bench.reporting.leaderboard.cells_frame`).

    Returns:
        one row per cell of a kind that the suite trains at two or more credit lengths
        of one env, with :data:`CREDIT_COLUMNS`, sorted by kind, memory length and credit
        length; empty (those columns) where the suite crosses no credit length.
    """
    frame = _with_lengths(cells)
    if frame.empty:
        return pd.DataFrame(columns=list(CREDIT_COLUMNS))
    frame = frame.sort_values(["env_id", "agent", "memory", "memory_length", "credit_length"])
    return frame[list(CREDIT_COLUMNS)].reset_index(drop=True)


def grows_with(memory_low: float, credit_low: float) -> str:
    """Which lengths the steps to solve grow with: those whose time ratio's interval lies
    wholly above 1 (``memory``, ``credit``, ``both`` or ``neither``); empty without a fit."""
    if math.isnan(memory_low) or math.isnan(credit_low):
        return ""
    memory, credit = memory_low > 1.0, credit_low > 1.0
    return {(True, True): "both", (True, False): "memory", (False, True): "credit"}.get(
        (memory, credit), "neither"
    )


def fit_time_ratios(
    durations: Any, observed: Any, memory_length: Any, credit_length: Any
) -> dict[str, float]:
    """Fit the Weibull AFT model of the module docstring.

    Args:
        durations: ``[n]`` env steps to solve, or for a run that did not solve, the steps
            it trained (right-censored).
        observed: ``[n]`` bool, the run solved.
        memory_length: ``[n]`` steps from cue to decision.
        credit_length: ``[n]`` steps from decision to reward.

    Returns:
        ``memory_ratio`` and ``credit_ratio`` (per :data:`LENGTH_UNIT` steps) with their
        ``_ci_low`` and ``_ci_high`` (95%), from ``lifelines.WeibullAFTFitter``.

    Raises:
        ValueError: fewer than :data:`MIN_SOLVED` solved runs, or a length that does not
            vary (its ratio would not be identified).
    """
    from lifelines import WeibullAFTFitter

    data = pd.DataFrame(
        {
            "steps": np.asarray(durations, dtype=np.float64),
            "solved": np.asarray(observed, dtype=bool),
            "memory": np.asarray(memory_length, dtype=np.float64) / LENGTH_UNIT,
            "credit": np.asarray(credit_length, dtype=np.float64) / LENGTH_UNIT,
        }
    )
    if int(data["solved"].sum()) < MIN_SOLVED:
        raise ValueError(f"{int(data['solved'].sum())} solved runs; the model needs at least {MIN_SOLVED}")
    for name in ("memory", "credit"):
        if data[name].nunique() < 2:
            raise ValueError(
                f"the {name} length takes one value ({data[name].iloc[0] * LENGTH_UNIT:g}); it must vary"
            )
    # Steps in units of 1e5 keep the intercept near 0, which the fitter's start assumes.
    data["steps"] = data["steps"] / 1e5
    fitter = WeibullAFTFitter(penalizer=PENALIZER, alpha=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lifelines' convergence chatter; the intervals say it
        fitter.fit(data, duration_col="steps", event_col="solved")
    summary = fitter.summary.loc["lambda_"]
    out: dict[str, float] = {}
    for name in ("memory", "credit"):
        row = summary.loc[name]
        out[f"{name}_ratio"] = _significant(row["exp(coef)"])
        out[f"{name}_ratio_ci_low"] = _significant(row["exp(coef) lower 95%"])
        out[f"{name}_ratio_ci_high"] = _significant(row["exp(coef) upper 95%"])
    return out


SIGNIFICANT_DIGITS = 6
"""Digits the model's ratios keep: the fit's optimiser differs between CPUs in the last
digits (about 1e-15), so the published table repeats only when rounded."""


def _significant(value: Any) -> float:
    return float(f"{float(value):.{SIGNIFICANT_DIGITS}g}")


def credit_model(runs: pd.DataFrame) -> pd.DataFrame:
    """Per kind, :func:`fit_time_ratios` over its finished runs (the runs table of
    :func:`~pomdp_bench.reporting.leaderboard.finished_cells`) at every memory and credit
    length.

    Only runs under a stop rule count (they have a ``stop_reason``); a run that stopped
    unsolved is censored at the steps it trained, as in
    :func:`~pomdp_bench.reporting.statistics.solve_statistics`.

    Returns:
        one row per kind trained at two or more credit lengths, with
        :data:`MODEL_COLUMNS`; a kind the model cannot fit has empty ratios and a
        ``note`` saying why.
    """
    frame = _with_lengths(runs)
    frame = frame[(frame["status"] == "ok") & (frame["stop_reason"].fillna("") != "")]
    rows = []
    for (env_id, agent, memory), group in frame.groupby(["env_id", "agent", "memory"], sort=True):
        steps, solved = censored_steps(group)
        row: dict[str, Any] = {
            "env_id": env_id,
            "agent": agent,
            "memory": memory,
            "n_runs": len(group),
            "n_solved": int(solved.sum()),
            "note": "",
        }
        try:
            ratios = fit_time_ratios(steps, solved, group["memory_length"], group["credit_length"])
        except ValueError as err:
            ratios = {
                f"{n}_ratio{s}": math.nan for n in ("memory", "credit") for s in ("", "_ci_low", "_ci_high")
            }
            row["note"] = str(err)
        row.update(ratios)
        row["grows_with"] = grows_with(ratios["memory_ratio_ci_low"], ratios["credit_ratio_ci_low"])
        rows.append(row)
    return pd.DataFrame(rows, columns=list(MODEL_COLUMNS))


__all__ = [
    "CREDIT_COLUMNS",
    "CREDIT_KWARG",
    "MODEL_COLUMNS",
    "credit_frame",
    "credit_model",
    "fit_time_ratios",
    "grows_with",
    "pays_late",
]
