"""From stored runs to leaderboard tables: one row per run, one row per cell over seeds.

A *cell* is ``(env, env kwargs, agent, memory, bptt_length)``; its statistics
are over the seeds whose run finished. The column schemas below are the
published contract: :func:`schema_markdown` renders them into
``leaderboards/README.md`` and a test checks the committed CSVs against them.

The verdict (``learned``, :func:`statistics.verdict_passes`): the 95% t interval of the
mean return over seeds lies above the line (the ceiling-optimum midpoint), and an exact
binomial test shows that more than half of the seeds end above it (one-sided, 5%). Its
calibration on simulated cells: docs/notes/verdict-calibration.md. The IQM interval
stays a seed-level bootstrap (rliable's).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pomdp_bench.envs.cards import EnvCard, card_of
from pomdp_bench.harness.analysis_records import (
    BEHAVIOUR_READINGS,
    FAILURE_CLASSES,
    BehaviourResult,
    GeneralisationResult,
    ProbeResult,
    SuccessResult,
    failure_class,
)
from pomdp_bench.harness.cells import CELL_KEYS, json_text
from pomdp_bench.reporting import credit
from pomdp_bench.reporting.mmer import mmer
from pomdp_bench.reporting.statistics import (
    majority_test,
    probability_of_improvement,
    solve_statistics,
    success_interval,
    t_interval,
    verdict_passes,
    verdict_survives_one_flip,
)

# column -> (type, meaning). Types: str, int, float, bool.
RUN_COLUMNS: dict[str, tuple[str, str]] = {
    "suite": ("str", "the suite the run belongs to"),
    "run_key": ("str", "hash of the full run spec (the store's primary key)"),
    "env_id": ("str", "registered env id"),
    "env_kwargs": ("str", "env kwargs on top of the registration's, as sorted JSON"),
    "horizon": ("int", "memory horizon of this env variant, in steps"),
    "agent": ("str", "the agent, by its registered name (pomdp_bench.agents.registry)"),
    "memory": ("str", "memory kind"),
    "memory_config": ("str", "the full memory config, as sorted JSON"),
    "bptt_length": ("int", "PPO bptt_length / SAC sequence_length; empty for kinds not trained through time"),
    "seed": ("int", "the run's seed index within its cell"),
    "agent_seed": (
        "int",
        "the seed the agent was built with, split from seed and the cell (runs stored before 0.2.0: seed itself)",
    ),
    "total_timesteps": ("int", "training budget, env steps"),
    "hyperparams": (
        "str",
        "the agent settings the run trained with (agents/<agent>.yaml's tuned values, then the suite's), as sorted JSON",
    ),
    "parameters": (
        "int",
        "trained weights, actor, critic and memory together (target copies excluded), counted when the run trained; empty for runs stored before runs counted them",
    ),
    "status": ("str", "ok or failed"),
    "final_return": ("float", "mean return of the final deterministic evaluation (empty if failed)"),
    "eval_episodes": ("int", "episodes of the final evaluation behind final_return"),
    "late_gain": (
        "float",
        "final_return minus the curve's evaluation at the last point at or before 75% of the budget",
    ),
    "mmer": (
        "float",
        "POPGym's metric: the largest mean return of the training episodes over the run's 65,536-step iterations (reporting/mmer.py; RLlib's episode_reward_mean, topped up to 100 episodes); empty for runs stored before runs kept it",
    ),
    "cue_reach": (
        "float",
        "share of finished training episodes whose last step's gradient reached horizon steps back within the same piece (PPO's gradient_reach; runs stored before 0.2.0: the same count from the rollout layout, exact for fixed-length episodes); empty for other agents",
    ),
    "cue_probe_accuracy": (
        "float",
        "cross-validated accuracy of a linear probe (logistic regression) from the memory's output at the decision step (T-Maze's junction, cue recall's query) to the episode's cue, on 256 fresh episodes (harness/probes.py, python -m pomdp_bench.analyse); empty where not analysed",
    ),
    "cue_probe_at_25": ("float", "the same probe 25% of the way from the cue to the decision step"),
    "cue_probe_at_50": ("float", "the same probe halfway"),
    "cue_probe_at_75": ("float", "the same probe 75% of the way"),
    "cue_probe_chance": ("float", "the probe's chance accuracy, 1 / number of cues"),
    "failure_class": (
        "str",
        "for a run whose final return is not above the line: lost_cue (cue_probe_accuracy within 0.1 of chance), kept_cue_unused (at least 0.9, and the return within 10% of the ceiling-optimum gap of the ceiling) or other; empty for runs above the line or not probed",
    ),
    "behaviour": (
        "str",
        "for a passive T-Maze run whose final return is not above the line, what its greedy final weights do on 256 fresh episodes (harness/tmaze_behaviour.py, python -m pomdp_bench.analyse): passes, cue_misused (the actions depend on the cue, its use fails), walk (under 3/4 reach the junction on time), no_turn or one_arm; empty elsewhere",
    ),
    "return_at_2x": (
        "float",
        "mean return of the final weights on 100 fresh episodes with the horizon's keyword (corridor_length, delay) doubled (harness/generalisation.py, python -m pomdp_bench.analyse); empty where not analysed",
    ),
    "return_at_4x": ("float", "the same with the keyword quadrupled"),
    "generalisation_limited_by": (
        "str",
        "window (transformer, gtrxl: num_layers * (window - 1) steps back) or frames (framestack: window - 1) where the kind cannot see the cue at a tested horizon by construction, so its return there is not forgetting; empty otherwise",
    ),
    "generalisation_limited_from": (
        "int",
        "the smallest tested multiple of the training horizon (2 or 4) where generalisation_limited_by applies",
    ),
    "success_rate": (
        "float",
        "share of 100 fresh episodes the final weights succeed on, for an env scored by success (its card's success_kwargs: KeyToDoor-v0's door; harness/success.py, python -m pomdp_bench.analyse); empty elsewhere",
    ),
    "analysis_note": (
        "str",
        "why an analysis left its columns empty: skipped (with the reason) or failed (with the error); empty otherwise",
    ),
    "stop_reason": (
        "str",
        "with a stop rule: solved, plateaued or cap (harness/stopping.py); empty for runs without one",
    ),
    "timesteps": ("int", "env steps trained (below total_timesteps when the run stopped early)"),
    "steps_to_solve": (
        "int",
        "env steps at the first evaluation of the unbroken streak at or above the learned line (halfway from ceiling to optimum) that ended in the stop rule's solve; empty if not solved or no stop rule",
    ),
    "seconds_to_solve": ("float", "training wall seconds (evaluations excluded) at that evaluation"),
    "steps_per_second": ("float", "env steps per second of training, evaluation excluded"),
    "wall_seconds": ("float", "the run's wall time, evaluation included"),
    "error": ("str", "last line of the error of a failed run"),
    "pomdp_bench_version": ("str", "package version"),
    "git_commit": ("str", "commit of the code that ran it (+dirty if uncommitted changes)"),
    "machine": (
        "str",
        "the machine that ran it, ;-separated: CPU model, family and model numbers, cores, Python and torch versions, the kernel ISA torch ran and the settings that cap it (older runs: model, cores, Python, torch)",
    ),
    "created_at": ("str", "when the run finished, UTC ISO 8601"),
}

CELL_COLUMNS: dict[str, tuple[str, str]] = {
    "suite": ("str", "the suite"),
    "env_id": ("str", "registered env id"),
    "env_kwargs": ("str", "env kwargs on top of the registration's, as sorted JSON"),
    "horizon": ("int", "memory horizon of this env variant, in steps"),
    "agent": ("str", "the agent, by its registered name"),
    "memory": ("str", "memory kind"),
    "bptt_length": ("int", "PPO bptt_length / SAC sequence_length; empty for kinds not trained through time"),
    "pieces": (
        "str",
        "nominal: long (bptt_length >= horizon + 1), short (shorter), or n/a; pieces are fixed windows of the rollout, so long pieces reach the cue only for some episodes: see cue_reach",
    ),
    "cue_reach": (
        "float",
        "mean over seeds of the runs' cue_reach: the share of training episodes whose decision's gradient reached back horizon steps, to the cue",
    ),
    "n_seeds": ("int", "seeds whose run finished"),
    "enough_seeds": (
        "bool",
        "n_seeds >= 5, the fewest a verdict rests on; below it learned is left empty",
    ),
    "n_failed": ("int", "seeds whose run failed"),
    "total_timesteps": ("int", "training budget per run, env steps: the cap every run of the cell had"),
    "hyperparams": (
        "str",
        "the cell's tuning: the agent settings its runs trained with (agents/<agent>.yaml's tuned values, then the suite's), as sorted JSON",
    ),
    "parameters": (
        "int",
        "trained weights of the cell's agent, actor, critic and memory together (its runs' median; target copies excluded); empty where no run counted them",
    ),
    "return_mean": ("float", "mean over seeds of the final evaluation return"),
    "return_iqm": ("float", "interquartile mean over seeds (scipy.stats.trim_mean, 25%)"),
    "return_ci_low": (
        "float",
        "lower end of the 95% t interval of the mean over seeds (scipy.stats.t, n_seeds - 1 degrees of freedom); empty for one seed",
    ),
    "return_ci_high": ("float", "upper end of that interval"),
    "mmer_mean": (
        "float",
        "mean over seeds of the runs' mmer (POPGym's max mean episodic reward, from training episodes); empty where no run kept it",
    ),
    "mmer_ci_low": ("float", "lower end of the 95% t interval of mmer_mean over seeds (scipy.stats.t)"),
    "mmer_ci_high": ("float", "upper end of that interval"),
    "cue_probe_accuracy": (
        "float",
        "mean over seeds of the runs' cue_probe_accuracy (the cue read linearly from the memory at the decision step); empty where no run was probed",
    ),
    "cue_probe_ci_low": (
        "float",
        "lower end of the 95% t interval of cue_probe_accuracy over seeds (scipy.stats.t)",
    ),
    "cue_probe_ci_high": ("float", "upper end of that interval"),
    "cue_probe_chance": ("float", "the probe's chance accuracy, 1 / number of cues"),
    "failure_classes": (
        "str",
        "the failure_class of the cell's runs below the line, counted, e.g. lost_cue 3;other 1; empty where none was probed",
    ),
    "behaviour_readings": (
        "str",
        "the behaviour of the cell's runs below the line, counted, e.g. walk 1;one_arm 2; empty where none was read",
    ),
    "return_at_2x": (
        "float",
        "mean over seeds of the runs' return_at_2x (the final weights at twice the training horizon)",
    ),
    "return_at_2x_ci_low": ("float", "lower end of its 95% t interval over seeds (scipy.stats.t)"),
    "return_at_2x_ci_high": ("float", "upper end of that interval"),
    "return_at_4x": ("float", "mean over seeds of the runs' return_at_4x"),
    "return_at_4x_ci_low": ("float", "lower end of its 95% t interval over seeds"),
    "return_at_4x_ci_high": ("float", "upper end of that interval"),
    "generalisation_limited_by": (
        "str",
        "window or frames where the kind cannot see the cue at a tested horizon by construction (see the run table); empty otherwise",
    ),
    "generalisation_limited_from": ("int", "the smallest tested multiple where that applies"),
    "success_rate": ("float", "mean over seeds of the runs' success_rate (envs scored by success)"),
    "success_ci_low": (
        "float",
        "lower end of its 95% Korn-Graubard interval: Clopper-Pearson on the effective episodes that the seeds' spread allows, inside [0, 1] (docs/statistics.md)",
    ),
    "success_ci_high": ("float", "upper end of that interval"),
    "ff_ceiling": ("float", "feedforward ceiling: best expected return of a memoryless policy"),
    "ff_ceiling_source": (
        "str",
        "analytic (env card); empirical: the higher of the best memory=none cell of the suite and the card's measured memoryless controller, or, for an env without a card (an implicit card), the suite's best memory=none cell where its runs converged (stopped as solved or plateaued; without a stop rule, a late gain of at most 5% of the gap to the optimum); lower_bound: that cell had not converged, so no verdict; unknown: no memory=none cell",
    ),
    "optimal_return": ("float", "optimal return (env card, or the suite's inline card); empty where unknown"),
    "normalized_score": (
        "float",
        "(return_mean - ff_ceiling) / (optimal_return - ff_ceiling); empty where the optimum or the ceiling is unknown (see verdict_note)",
    ),
    "late_gain": (
        "float",
        "mean over seeds of the runs' late_gain (last quarter of training), / (optimal_return - ff_ceiling)",
    ),
    "plateaued": ("bool", "late_gain <= 0.05: the curve had flattened by the end of the budget"),
    "seeds_above_line": (
        "int",
        "seeds whose final return is above the line (ff_ceiling + optimal_return) / 2; empty where the line is unknown",
    ),
    "majority_p": (
        "float",
        "exact one-sided binomial p-value that more than half of the seeds end above the line (scipy.stats.binomtest)",
    ),
    "learned": (
        "bool",
        "return_ci_low > (ff_ceiling + optimal_return) / 2 and majority_p <= 0.05: the mean is above the line and more than half of the seeds are (at 5 seeds: all 5); empty below 5 seeds, and where the optimum is unknown or the ceiling only a lower bound",
    ),
    "verdict_holds": (
        "bool",
        "learned would stay as it is if any one seed ended on the other side of the line (a seed above moved to ff_ceiling, one below to optimal_return), as a run on another CPU's kernels may; empty where learned is",
    ),
    "verdict_note": (
        "str",
        "why normalized_score or learned is empty or qualified (unknown optimum, a lower-bound or unknown ceiling), and why a cell whose every run stopped solved is not learned; empty otherwise",
    ),
    "stop_reasons": (
        "str",
        "how the cell's runs ended, e.g. solved 4;cap 1 (empty for runs without a stop rule)",
    ),
    "solved_fraction": ("float", "share of the cell's runs with a stop rule that solved (empty without one)"),
    "solved_ci_low": (
        "float",
        "lower end of the exact (Clopper-Pearson) 95% interval of that solve rate (scipy.stats.binomtest)",
    ),
    "solved_ci_high": ("float", "upper end of that interval"),
    "steps_to_solve": (
        "float",
        "Kaplan-Meier median of steps_to_solve over seeds (lifelines), runs that did not solve censored at the steps they trained; empty when fewer than half solved or no stop rule",
    ),
    "steps_to_solve_ci_low": (
        "float",
        "lower end of its 95% interval (lifelines: the median read off the exponential-Greenwood band of the survival curve)",
    ),
    "steps_to_solve_ci_high": (
        "float",
        "upper end; empty where the band never falls to one half (unbounded)",
    ),
    "seconds_to_solve": (
        "float",
        "Kaplan-Meier median of seconds_to_solve, censored at each unsolved run's training seconds",
    ),
    "steps_per_second": ("float", "mean over seeds of training env steps per second"),
    "wall_seconds": ("float", "mean over seeds of the run's wall time"),
    "pomdp_bench_version": ("str", "package version"),
    "git_commit": ("str", "commit(s) of the code that ran the cell, ;-separated"),
    "cpu": (
        "str",
        "CPU model(s) of the machines that ran the cell's runs, ;-separated (the first field of machine), each with its family and model numbers and kernel ISA where the runs give them",
    ),
    "machine": ("str", "machine(s) that ran the cell, ;-separated"),
    "command": ("str", "the command that reproduces the suite"),
    "created_at": ("str", "when the last run of the cell finished, UTC ISO 8601"),
}

HORIZON_COLUMNS: dict[str, tuple[str, str]] = {
    "suite": ("str", "the suite"),
    "env_id": ("str", "registered env id"),
    "agent": ("str", "the agent, by its registered name"),
    "memory": ("str", "memory kind"),
    "pieces": ("str", "long, short or n/a (see the cell table)"),
    "horizons_tried": ("str", "the horizons this kind and piece policy were tried at, ;-separated"),
    "longest_horizon_learned": (
        "int",
        "the horizon limit: the longest horizon tried whose cell is learned and every shorter one tried is too; 0 if the shortest is not",
    ),
    "max_horizon_learned": (
        "int",
        "the longest horizon whose cell is learned, where it differs from longest_horizon_learned (a longer horizon learned above one not learned); empty where they agree",
    ),
    "horizon_note": (
        "str",
        "why max_horizon_learned differs: the horizons not learned below it; empty where they agree",
    ),
    "steps_to_solve_at_longest": (
        "float",
        "that cell's steps_to_solve (Kaplan-Meier median over seeds; empty without a stop rule or if none learned)",
    ),
    "cue_reach_at_longest": (
        "float",
        "cue_reach of that cell: how often its gradient actually reached the cue (empty if none learned)",
    ),
    "next_horizon": (
        "int",
        "the shortest horizon tried above longest_horizon_learned (empty if none was tried: the limit lies beyond the suite)",
    ),
    "next_outcome": (
        "str",
        "how next_horizon's cell ended: failed (not learned, and every unsolved run reached a cap of at least 10x the median steps that solved the horizon below), plateaued (not learned; some unsolved run stopped on a plateau, none at a smaller cap: censored, not a failure), budget (not learned, but some unsolved run stopped at a smaller cap or had no stop rule), no verdict (fewer than 5 seeds), or not tried",
    ),
    "next_failure_classes": (
        "str",
        "why next_horizon's failed runs failed: the cell's failure_classes from the memory probes (lost_cue, kept_cue_unused, other), then on the passive T-Maze its behaviour_readings (walk, no_turn, one_arm, cue_misused, passes); empty where not analysed or not tried",
    ),
    "limit_censored": (
        "bool",
        "true unless next_outcome is failed: longest_horizon_learned is then only a lower bound of what the kind learns, set by the suite's horizons, budgets or plateaus",
    ),
    "cpu": ("str", "CPU model(s) that ran the line's cells, ;-separated"),
}

IMPROVEMENT_COLUMNS: dict[str, tuple[str, str]] = {
    "suite": ("str", "the suite"),
    "env_id": ("str", "registered env id"),
    "env_kwargs": ("str", "env kwargs on top of the registration's, as sorted JSON"),
    "horizon": ("int", "memory horizon of this env variant, in steps"),
    "agent": ("str", "the agent, by its registered name"),
    "memory_a": (
        "str",
        "kind A (of a cell pair of the same env variant and agent; each unordered pair once)",
    ),
    "bptt_length_a": ("int", "kind A's bptt_length; empty for kinds not trained through time"),
    "memory_b": ("str", "kind B"),
    "bptt_length_b": ("int", "kind B's bptt_length"),
    "n_a": ("int", "A's finished runs"),
    "n_b": ("int", "B's finished runs"),
    "prob_improvement": (
        "float",
        "P(X > Y) + P(X = Y) / 2 for X an A run's final return and Y a B run's (rliable's probability of improvement; 0.5: neither is better)",
    ),
    "prob_improvement_ci_low": (
        "float",
        "lower end of its 95% percentile bootstrap interval (scipy.stats.bootstrap, each kind's runs resampled independently, 2000 resamples, fixed seed)",
    ),
    "prob_improvement_ci_high": ("float", "upper end of that interval"),
    "cpu": ("str", "CPU model(s) that ran the two cells' runs, ;-separated"),
}

# The fewest seeds a verdict (learned) rests on; fewer leave it empty.
MIN_SEEDS = 5


def _late_gain(result: dict[str, Any], budget: int) -> float:
    """Final return minus the curve's value at the last point at or before 75% of ``budget``."""
    curve = result.get("curve") or []
    earlier = [r for t, r in curve if t <= 0.75 * budget]
    return float(result["final_return"] - earlier[-1]) if earlier else math.nan


def _trained_steps(result: dict[str, Any], spec: dict[str, Any]) -> int | None:
    """Env steps a run trained: stored since stop rules; before, the curve's last point."""
    if result.get("timesteps") is not None:
        return int(result["timesteps"])
    curve = result.get("curve") or []
    return int(curve[-1][0]) if curve else None


def cue_reach(gradient_reach: list[int] | np.ndarray | None, horizon: int) -> float:
    """The share of training episodes whose decision's gradient reached ``horizon`` steps
    back, from a ``gradient_reach`` histogram (``[k]``: episodes reaching exactly ``k``)."""
    if gradient_reach is None:
        return math.nan
    counts = np.asarray(gradient_reach, dtype=np.int64)
    total = counts.sum()
    return float(counts[horizon:].sum() / total) if total else math.nan


def runs_frame(rows: list[dict[str, Any]], suite: str) -> pd.DataFrame:
    """One row per stored run of ``suite`` (rows from :meth:`ResultStore.rows`)."""
    records = []
    for row in rows:
        spec, result = row["spec"], row["result"]
        reach = result.get("gradient_reach")  # older runs: filled by migrations.fill_gradient_reach
        error = result.get("error", "").strip().splitlines()
        records.append(
            {
                "suite": suite,
                "run_key": row["key"],
                "env_id": spec["env_id"],
                "env_kwargs": json_text(spec["env_kwargs"]),
                "horizon": spec["horizon"],
                "agent": spec["agent"],
                "memory": spec["memory"]["kind"],
                "memory_config": json_text(spec["memory"]),
                "bptt_length": spec["bptt_length"],
                "seed": spec["seed"],
                "agent_seed": spec["seed"] if result.get("agent_seed") is None else result["agent_seed"],
                "total_timesteps": spec["total_timesteps"],
                "hyperparams": json_text(spec.get("hyperparams") or {}),
                "parameters": result.get("parameters"),
                "status": row["status"],
                "final_return": result["final_return"] if row["status"] == "ok" else math.nan,
                "eval_episodes": len(result.get("final_returns") or []) or spec["eval_episodes"],
                "late_gain": _late_gain(result, spec["total_timesteps"])
                if row["status"] == "ok"
                else math.nan,
                "mmer": mmer(result.get("train_curve")) if row["status"] == "ok" else math.nan,
                "cue_reach": cue_reach(reach, spec["horizon"]) if spec["horizon"] > 0 else math.nan,
                **analysis_columns(row),
                "stop_reason": result.get("stop_reason", ""),
                "timesteps": _trained_steps(result, spec),
                "steps_to_solve": result.get("solved_steps"),
                "seconds_to_solve": result.get("solved_seconds"),
                "steps_per_second": result["steps_per_second"],
                "wall_seconds": result["wall_seconds"],
                "error": error[-1] if error else "",
                "pomdp_bench_version": spec["version"],
                "git_commit": row["git_commit"],
                "machine": row["machine"],
                "created_at": row["created_at"],
                # Not published (RUN_COLUMNS): the per-episode returns the verdict resamples,
                # the card a run of an env without a shipped card carried, and its cell's
                # seed count (finished_cells). success_episodes, from analysis_columns, too.
                "episode_returns": result.get("final_returns") or [result["final_return"]],
                "card": json_text(spec["card"]) if spec.get("card") is not None else "",
                "cell_seeds": spec.get("cell_seeds"),
            }
        )
    frame = pd.DataFrame.from_records(
        records, columns=[*RUN_COLUMNS, "episode_returns", "card", "cell_seeds", "success_episodes"]
    )
    frame["cell_seeds"] = frame["cell_seeds"].astype("float64")  # NaN: stored before counts were
    for column in ("bptt_length", "timesteps", "steps_to_solve", "generalisation_limited_from"):
        frame[column] = frame[column].astype("Int64")
    frame["seconds_to_solve"] = frame["seconds_to_solve"].astype("float64")
    return frame.sort_values(
        ["env_id", "env_kwargs", "agent", "memory", "bptt_length", "seed"], ignore_index=True
    )


def analysis_columns(row: dict[str, Any]) -> dict[str, Any]:
    """The run columns the analysis step fills (``cue_probe_*``, ``failure_class``,
    ``return_at_*``, ``generalisation_*``, ``success_rate``, ``analysis_note``) from a stored row's
    ``analyses`` (:meth:`ResultStore.analyses`); empty (NaN, ``""``) where none ran."""
    analyses = row.get("analyses") or {}
    out: dict[str, Any] = {
        "cue_probe_accuracy": math.nan,
        "cue_probe_at_25": math.nan,
        "cue_probe_at_50": math.nan,
        "cue_probe_at_75": math.nan,
        "cue_probe_chance": math.nan,
        "failure_class": "",
        "behaviour": "",
        "return_at_2x": math.nan,
        "return_at_4x": math.nan,
        "generalisation_limited_by": "",
        "generalisation_limited_from": None,
        "success_rate": math.nan,
        "success_episodes": math.nan,
    }
    notes = [
        f"{name}: {entry['status']}: {entry['error']}"
        for name, entry in sorted(analyses.items())
        if entry["status"] != "ok"
    ]
    out["analysis_note"] = "; ".join(notes)
    probe = analyses.get("probes", {})
    if probe.get("status") == "ok":
        found = ProbeResult.from_dict(probe["value"])
        at = dict(zip(found.fractions, found.accuracies, strict=True))
        out.update(
            cue_probe_accuracy=found.accuracy,
            cue_probe_at_25=at.get(0.25, math.nan),
            cue_probe_at_50=at.get(0.5, math.nan),
            cue_probe_at_75=at.get(0.75, math.nan),
            cue_probe_chance=found.chance,
        )
        if row["status"] == "ok":
            spec = row["spec"]
            card = card_of(spec["env_id"], spec.get("card"))
            out["failure_class"] = failure_class(
                found.accuracy,
                found.chance,
                row["result"]["final_return"],
                card.ceiling_for(spec["env_kwargs"]),
                card.optimal_return,
            )
    behaviour = analyses.get("behaviour", {})
    if behaviour.get("status") == "ok" and row["status"] == "ok":
        spec = row["spec"]
        card = card_of(spec["env_id"], spec.get("card"))
        ceiling, optimum = card.ceiling_for(spec["env_kwargs"]), card.optimal_return
        if row["result"]["final_return"] <= ceiling + (optimum - ceiling) / 2:  # not above the line
            out["behaviour"] = BehaviourResult.from_dict(behaviour["value"]).reading
    general = analyses.get("generalisation", {})
    if general.get("status") == "ok":
        found_g = GeneralisationResult.from_dict(general["value"])
        bound, factor = found_g.limit()
        out.update(
            return_at_2x=found_g.return_at(2),
            return_at_4x=found_g.return_at(4),
            generalisation_limited_by=bound,
            generalisation_limited_from=factor,
        )
    scored = analyses.get("success", {})
    if scored.get("status") == "ok":
        found_s = SuccessResult.from_dict(scored["value"])
        out["success_rate"], out["success_episodes"] = found_s.rate, found_s.n_episodes
    return out


def _analysis_statistics(ok: pd.DataFrame) -> dict[str, Any]:
    """A cell's analysis columns (:data:`CELL_COLUMNS`) from its finished runs (rows of
    :func:`runs_frame`)."""
    out: dict[str, Any] = {}
    for column, prefix in (
        ("cue_probe_accuracy", "cue_probe"),
        ("return_at_2x", "return_at_2x"),
        ("return_at_4x", "return_at_4x"),
        ("success_rate", "success"),
    ):
        kept = ok[column].dropna().to_numpy(dtype=np.float64)
        out[column] = float(kept.mean()) if len(kept) else math.nan
        out[f"{prefix}_ci_low"], out[f"{prefix}_ci_high"] = t_interval(kept)
    scored = ok.dropna(subset=["success_rate"])  # a rate: an interval inside [0, 1]
    # Each seed's episodes (harness/success.py's 100 where a frame lacks them).
    episodes = (
        scored["success_episodes"].fillna(100)
        if "success_episodes" in scored
        else 100.0 + 0 * scored["success_rate"]
    )
    out["success_ci_low"], out["success_ci_high"] = success_interval(
        scored["success_rate"].to_numpy(dtype=np.float64), float(episodes.sum())
    )
    chance = ok["cue_probe_chance"].dropna()
    out["cue_probe_chance"] = float(chance.iloc[0]) if len(chance) else math.nan
    classes = [c for c in ok["failure_class"] if c]
    out["failure_classes"] = ";".join(
        f"{name} {classes.count(name)}" for name in FAILURE_CLASSES if name in classes
    )
    readings = [r for r in ok["behaviour"] if r] if "behaviour" in ok else []
    out["behaviour_readings"] = ";".join(
        f"{name} {readings.count(name)}" for name in BEHAVIOUR_READINGS if name in readings
    )
    limited = ok[ok["generalisation_limited_by"] != ""]
    out["generalisation_limited_by"] = limited["generalisation_limited_by"].iloc[0] if len(limited) else ""
    out["generalisation_limited_from"] = (
        int(limited["generalisation_limited_from"].min()) if len(limited) else None
    )
    return out


def _mmer_statistics(values: pd.Series) -> dict[str, float]:
    """``mmer_mean`` and its t interval over the seeds that kept a training curve."""
    kept = values.dropna().to_numpy(dtype=np.float64)
    low, high = t_interval(kept)
    return {
        "mmer_mean": float(kept.mean()) if len(kept) else math.nan,
        "mmer_ci_low": low,
        "mmer_ci_high": high,
    }


def machine_fields(machine: str) -> dict[str, str]:
    """The parts of a run's ``machine`` string (harness/provenance.py ``machine_line``):
    ``cpu`` (the first field), and where given ``family``, ``model``, ``isa`` and each
    ``NAME=value`` setting by its name. Older strings give the CPU model alone."""
    parts = [part.strip() for part in str(machine).split(";")]
    found = {"cpu": parts[0]}
    for part in parts[1:]:
        numbers = re.fullmatch(r"family (\S+) model (\S+)", part)
        if numbers:
            found["family"], found["model"] = numbers.groups()
        elif part.startswith("ISA "):
            found["isa"] = part.removeprefix("ISA ").strip()
        elif re.fullmatch(r"[A-Z][A-Z0-9_]*=\S.*", part):
            name, _, value = part.partition("=")
            found[name] = value
    return found


def cpu_of(machine: str) -> str:
    """The CPU of a ``machine`` string: its model, then in parentheses its family and model
    numbers, the kernel ISA and the settings that cap it, where the string gives them."""
    found = machine_fields(machine)
    extra = [f"family {found['family']} model {found['model']}"] if "family" in found else []
    extra += [f"ISA {found['isa']}"] if "isa" in found else []
    extra += [f"{name}={value}" for name, value in found.items() if "=" not in name and name.isupper()]
    return found["cpu"] + (f" ({', '.join(extra)})" if extra else "")


def cpus(machines: Any) -> str:
    """The distinct CPU models of ``machines``, sorted and ``;``-separated."""
    return ";".join(sorted({cpu_of(m) for m in machines}))


def pieces(bptt_length: Any, horizon: int) -> str:
    """Nominal piece length against the horizon: long, short or n/a (see ``cue_reach``);
    n/a also where the horizon is unknown (0: an outside env's implicit card)."""
    if bptt_length is None or pd.isna(bptt_length) or horizon <= 0:
        return "n/a"
    return "long" if int(bptt_length) >= horizon + 1 else "short"


def check_one_cell_per_row(runs: pd.DataFrame) -> None:
    """Refuse runs of two cells that share a row (:data:`CELL_KEYS`): cells that differ
    only in settings a row does not show (hyperparams, memory config, budget, card).
    Their runs would be pooled as one cell's seeds, and the row's seed count would mark
    every other cell unfinished. Seen as one seed run twice in a row.

    Raises:
        ValueError: naming the row; a changed cell's old runs are unlinked from the
            suite with :meth:`~pomdp_bench.harness.store.ResultStore.unlink_stale`.
    """
    per_seed = runs.groupby([*CELL_KEYS, "seed"], dropna=False)["run_key"].nunique()
    twice = per_seed[per_seed > 1]
    if not twice.empty:
        env_id, env_kwargs, agent, memory, bptt, seed = twice.index[0]
        raise ValueError(
            f"{len(twice)} seeds were run by two or more cells of one leaderboard row, e.g. "
            f"{env_id} {env_kwargs} {agent} {memory} bptt={bptt} seed={seed}: cells that differ "
            f"only in settings the row does not show would be pooled as one cell's seeds. Keep "
            f"one such cell in the suite, and unlink a changed cell's old runs "
            f"(ResultStore.unlink_stale(suite, keys of the suite as it expands))"
        )


def finished_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of cells whose every seed has run: as many as the cell's runs record
    (:attr:`RunSpec.cell_seeds`), or for runs stored before that was recorded, as many
    as the fullest of their cells.

    A sweep stopped in the middle of a cell leaves it with fewer seeds than it declares;
    its interval would not be comparable, so it waits until a resumed sweep fills it.
    """
    if runs.empty:
        return runs
    check_one_cell_per_row(runs)
    cells = runs.groupby(CELL_KEYS, dropna=False)
    per_cell = cells["run_key"].transform("size")
    declared = (
        cells["cell_seeds"].transform("max") if "cell_seeds" in runs else pd.Series(math.nan, runs.index)
    )
    undeclared = declared.isna()
    target = declared.where(~undeclared, per_cell[undeclared].max() if undeclared.any() else math.nan)
    return runs[per_cell >= target]


def cells_frame(runs: pd.DataFrame, command: str = "") -> pd.DataFrame:
    """One row per cell: statistics over seeds, ceilings, scores (see :data:`CELL_COLUMNS`)."""
    records = []
    for keys, group in runs.groupby(CELL_KEYS, dropna=False, sort=True):
        ok = group[group["status"] == "ok"]
        returns = ok["final_return"].to_numpy(dtype=np.float64)
        low, high = t_interval(returns)
        first = group.iloc[0]
        record = dict(zip(CELL_KEYS, keys, strict=True))
        record.update(
            suite=first["suite"],
            horizon=int(first["horizon"]),
            pieces=pieces(record["bptt_length"], int(first["horizon"])),
            cue_reach=float(ok["cue_reach"].mean()) if ok["cue_reach"].notna().any() else math.nan,
            n_seeds=len(ok),
            n_failed=len(group) - len(ok),
            total_timesteps=int(first["total_timesteps"]),
            hyperparams=first["hyperparams"],
            parameters=_median_count(group["parameters"]),
            return_mean=float(returns.mean()) if len(returns) else math.nan,
            return_iqm=float(stats.trim_mean(returns, 0.25)) if len(returns) else math.nan,
            return_ci_low=low,
            return_ci_high=high,
            **_mmer_statistics(ok["mmer"]),
            **_analysis_statistics(ok),
            late_gain=float(ok["late_gain"].mean()) if ok["late_gain"].notna().any() else math.nan,
            **solve_statistics(ok),
            steps_per_second=float(ok["steps_per_second"].mean()) if len(ok) else math.nan,
            wall_seconds=float(group["wall_seconds"].mean()),
            pomdp_bench_version=";".join(sorted(set(group["pomdp_bench_version"]))),
            git_commit=";".join(sorted(set(group["git_commit"]))),
            cpu=cpus(group["machine"]),
            machine=";".join(sorted(set(group["machine"]))),
            command=command,
            created_at=max(group["created_at"]),
            card=first.get("card", ""),
            seed_means=returns,  # not published: what the verdict reads (_add_ceilings)
        )
        records.append(record)
    cells = pd.DataFrame.from_records(records)
    if cells.empty:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    _add_ceilings(cells)
    cells["bptt_length"] = cells["bptt_length"].astype("Int64")
    cells["seeds_above_line"] = cells["seeds_above_line"].astype("Int64")
    cells["parameters"] = cells["parameters"].astype("Int64")
    cells["generalisation_limited_from"] = cells["generalisation_limited_from"].astype("Int64")
    return cells[list(CELL_COLUMNS)]


def _median_count(values: pd.Series) -> int | None:
    """The median of the counts that are there (None when none is)."""
    present = pd.to_numeric(values, errors="coerce").dropna()
    return None if present.empty else int(present.median())


def _cell_card(cell: pd.Series) -> EnvCard:
    """The card of a cell: the one its runs carried (an env without a shipped card), else
    the shipped card of its id."""
    return card_of(cell["env_id"], json.loads(cell["card"]) if cell["card"] else None)


def _converged(cell: pd.Series, optimum: float, ceiling: float) -> bool:
    """Whether a memory=none cell's runs converged, so that its return measures what a
    memoryless policy does rather than a lower bound of it: every run stopped as solved
    or plateaued by its stop rule; without one, its mean late gain (last quarter of the
    budget) is at most 5% of the gap from its return to a known optimum."""
    counts = stop_counts(cell["stop_reasons"])
    if counts:
        return counts.get("cap", 0) == 0
    if math.isnan(optimum) or math.isnan(cell["late_gain"]):
        return False
    return bool(cell["late_gain"] <= PLATEAU_GAIN * max(optimum - ceiling, 1e-12))


# Why an implicit card's ceiling gave no verdict, and the card field that gives one.
CEILING_NOTE = (
    "ceiling is a lower bound: the memory=none runs had not converged; "
    "set ff_ceiling in the env's card (the suite entry's card: or its card file)"
)

# The late gain, as a share of the gap from the ceiling to the optimum, under which a
# curve counts as flat (the ``plateaued`` column; the convergence of an empirical ceiling).
PLATEAU_GAIN = 0.05


def _add_ceilings(cells: pd.DataFrame) -> None:
    ceilings, sources, optima, notes = [], [], [], []
    for _, cell in cells.iterrows():
        card = _cell_card(cell)
        kwargs = json.loads(cell["env_kwargs"])
        optimum = float(card.optimal_return)
        optima.append(optimum)
        note = [] if card.optimum_known else ["optimum unknown: give optimal_return in the suite's card"]
        same = cells[
            (cells["env_id"] == cell["env_id"])
            & (cells["env_kwargs"] == cell["env_kwargs"])
            & (cells["agent"] == cell["agent"])
            & (cells["memory"] == "none")  # a kind name on purpose: the memoryless baseline
            & (cells["n_seeds"] > 0)
        ]
        if card.ff_ceiling_source == "analytic":
            ceilings.append(card.ceiling_for(kwargs))
            sources.append("analytic")
        elif card.ceiling_known:
            # Empirical: the best memoryless result known, the suite's best memory=none cell or
            # the card's measured memoryless controller, whichever is higher (an under-trained
            # none cell must not lower the bar).
            best_none = float(same["return_mean"].max()) if len(same) else -math.inf
            ceilings.append(max(best_none, card.ceiling_for(kwargs)))
            sources.append("empirical")
        elif len(same):  # an implicit card: the suite's best memory=none cell, if it converged
            best = same.loc[same["return_mean"].idxmax()]
            ceilings.append(float(best["return_mean"]))
            if _converged(best, optimum, float(best["return_mean"])):
                sources.append("empirical")
            else:
                sources.append("lower_bound")
                note.append(CEILING_NOTE)
        else:
            ceilings.append(math.nan)
            sources.append("unknown")
            note.append("no memory=none cell to measure the ceiling")
        notes.append("; ".join(note))
    cells["ff_ceiling"] = ceilings
    cells["ff_ceiling_source"] = sources
    cells["optimal_return"] = optima
    cells["verdict_note"] = notes
    cells["normalized_score"] = (cells["return_mean"] - cells["ff_ceiling"]) / (
        cells["optimal_return"] - cells["ff_ceiling"]
    )
    enough = cells["n_seeds"] >= MIN_SEEDS
    cells["enough_seeds"] = enough.astype(bool)
    cells["late_gain"] = cells["late_gain"] / (cells["optimal_return"] - cells["ff_ceiling"])
    cells["plateaued"] = (cells["late_gain"] <= PLATEAU_GAIN).fillna(False).astype(bool)
    midpoint = (cells["ff_ceiling"] + cells["optimal_return"]) / 2
    # A verdict needs a known optimum and a ceiling that is not merely a lower bound.
    judged = enough & cells["ff_ceiling_source"].isin(["analytic", "empirical"]) & midpoint.notna()
    tests = [
        majority_test(means, line) if not math.isnan(line) else (pd.NA, math.nan)
        for means, line in zip(cells["seed_means"], midpoint, strict=True)
    ]
    cells["seeds_above_line"] = [above for above, _ in tests]
    cells["majority_p"] = [p for _, p in tests]
    passed = pd.Series(
        [
            not math.isnan(line) and verdict_passes(means, line)
            for means, line in zip(cells["seed_means"], midpoint, strict=True)
        ],
        index=cells.index,
    )
    cells["learned"] = _verdict(passed, judged)
    holds = pd.Series(
        [
            verdict_survives_one_flip(means, line, ceiling, optimum)
            for means, line, ceiling, optimum in zip(
                cells["seed_means"], midpoint, cells["ff_ceiling"], cells["optimal_return"], strict=True
            )
        ],
        index=cells.index,
    )
    cells["verdict_holds"] = _verdict(holds, judged)
    cells["verdict_note"] = [
        "; ".join(part for part in (note, _solved_not_learned(cell, line)) if part)
        for note, (_, cell), line in zip(cells["verdict_note"], cells.iterrows(), midpoint, strict=True)
    ]


def _solved_not_learned(cell: pd.Series, line: float) -> str:
    """Why a cell whose every run stopped solved is not learned (issue 47); empty for
    any other cell."""
    solved = stop_counts(cell["stop_reasons"]).get("solved", 0)
    learned, above = cell["learned"], cell["seeds_above_line"]
    if pd.isna(learned) or bool(learned) or pd.isna(above) or solved == 0 or solved < cell["n_seeds"]:
        return ""
    below = int(cell["n_seeds"]) - int(above)
    if below:
        return (
            f"every run stopped solved, but {below} of {int(cell['n_seeds'])} ended at or below the line "
            "at their final evaluation"
        )
    return (
        f"every run stopped solved and ended above the line, but the t interval's lower end "
        f"({cell['return_ci_low']:.3g}) is not above it ({line:.3g}): the seeds' spread"
    )


def _verdict(passed: pd.Series, enough: pd.Series) -> pd.Series:
    """A verdict column: True/False where the cell has enough seeds, empty (NA) elsewhere."""
    return passed.fillna(False).astype("boolean").where(enough, pd.NA)


# A failure at horizon H counts as the kind's limit only with caps of at least this many
# times the median steps that solved the horizon below (issue 21): a property of the
# kind, not of the budget.
CAP_FACTOR = 10


def stop_counts(stop_reasons: Any) -> dict[str, int]:
    """``"solved 4;cap 1"`` -> ``{"solved": 4, "cap": 1}`` (empty for runs without a stop rule)."""
    if not isinstance(stop_reasons, str) or not stop_reasons:
        return {}
    return {reason: int(count) for reason, count in (part.split(" ") for part in stop_reasons.split(";"))}


def failure_outcome(cell: pd.Series, steps_below: float) -> str:
    """``failed``, ``plateaued`` or ``budget`` for a cell that was not learned (see
    :data:`HORIZON_COLUMNS`).

    ``steps_below``: the median steps that solved the horizon below (NaN if none did).
    A run that reached its cap counts as failed only if the cap was at least
    :data:`CAP_FACTOR` times ``steps_below`` (with no such reference, a cap never
    counts: ``budget``). A run that plateaued is censored, not failed (``plateaued``):
    the plateau rule stopped it, so it says when the curve flattened, not that the kind
    cannot learn the horizon. ``budget`` wins over ``plateaued``, which wins over
    ``failed``; a cell whose every unsolved run plateaued or reached a large cap, with
    at least one plateau, is ``plateaued``.
    """
    counts = stop_counts(cell["stop_reasons"])
    if not counts:
        return "budget"  # no stop rule: the budget ended every run
    cap_enough = not math.isnan(steps_below) and cell["total_timesteps"] >= CAP_FACTOR * steps_below
    if counts.get("cap", 0) and not cap_enough:
        return "budget"
    return "plateaued" if counts.get("plateaued", 0) else "failed"


def horizon_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """The horizon limit per (env, agent, memory, nominal piece length): the longest
    horizon learned with every shorter horizon tried learned too, the longest learned
    where that differs, and whether the next horizon tried is a counted failure or the
    limit is censored. Cells whose reward comes late (a ``reward_delay``,
    :func:`credit.pays_late`) are left out: the limit is memory's, with the reward at the
    decision."""
    records = []
    cells = cells[~credit.pays_late(cells)]
    for (env_id, agent, memory, policy), group in cells.groupby(
        ["env_id", "agent", "memory", "pieces"], sort=True
    ):
        group = group.sort_values("horizon")
        is_learned = group["learned"].astype("boolean").fillna(False).astype(bool).to_numpy()
        run = int(np.argmin(is_learned)) if not is_learned.all() else len(group)  # learned prefix
        longest = group.iloc[run - 1] if run else None
        longest_h = 0 if longest is None else int(longest["horizon"])
        highest = group[is_learned].iloc[-1] if is_learned.any() else None
        differs = highest is not None and int(highest["horizon"]) != longest_h
        gaps = group[
            ~is_learned & (group["horizon"] < (int(highest["horizon"]) if differs else 0)).to_numpy()
        ]
        above = group[group["horizon"] > longest_h]
        record = {
            "suite": group["suite"].iloc[0],
            "env_id": env_id,
            "agent": agent,
            "memory": memory,
            "pieces": policy,
            "horizons_tried": ";".join(str(int(h)) for h in group["horizon"].unique()),
            "longest_horizon_learned": longest_h,
            "max_horizon_learned": int(highest["horizon"]) if differs else pd.NA,
            "horizon_note": (
                f"learned at {int(highest['horizon'])} but not at "
                + ", ".join(str(int(h)) for h in gaps["horizon"])
                if differs
                else ""
            ),
            "steps_to_solve_at_longest": math.nan if longest is None else float(longest["steps_to_solve"]),
            "cue_reach_at_longest": math.nan if longest is None else float(longest["cue_reach"]),
            "next_horizon": pd.NA,
            "next_outcome": "not tried",
            "next_failure_classes": "",
        }
        if len(above):
            following = above.iloc[0]
            steps_below = record["steps_to_solve_at_longest"]
            record["next_horizon"] = int(following["horizon"])
            record["next_outcome"] = (
                "no verdict"  # too few seeds to call it learned or not
                if pd.isna(following["learned"])
                else failure_outcome(following, steps_below)
            )
            why = [following.get(c, "") for c in ("failure_classes", "behaviour_readings")]
            record["next_failure_classes"] = ";".join(str(w) for w in why if isinstance(w, str) and w)
        record["limit_censored"] = record["next_outcome"] != "failed"
        listed = group["cpu"].dropna() if "cpu" in group else []
        record["cpu"] = ";".join(sorted({c for text in listed for c in str(text).split(";") if c}))
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=list(HORIZON_COLUMNS))
    frame["next_horizon"] = frame["next_horizon"].astype("Int64")
    frame["max_horizon_learned"] = frame["max_horizon_learned"].astype("Int64")
    return frame


def improvement_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Kind against kind (:data:`IMPROVEMENT_COLUMNS`): for each env variant and agent,
    every unordered pair of its cells, the probability that a run of the first beats a
    run of the second (:func:`statistics.probability_of_improvement` over the finished
    runs' final returns). ``runs``: the runs of finished cells (:func:`finished_cells`)."""
    ok = runs[runs["status"] == "ok"]
    records = []
    for (env_id, env_kwargs, agent), group in ok.groupby(["env_id", "env_kwargs", "agent"], sort=True):
        cells = [
            (keys, cell) for keys, cell in group.groupby(["memory", "bptt_length"], dropna=False, sort=True)
        ]
        for i, ((memory_a, bptt_a), a) in enumerate(cells):
            for (memory_b, bptt_b), b in cells[i + 1 :]:
                x = a["final_return"].to_numpy(dtype=np.float64)
                y = b["final_return"].to_numpy(dtype=np.float64)
                estimate, low, high = probability_of_improvement(x, y)
                records.append(
                    {
                        "suite": group["suite"].iloc[0],
                        "env_id": env_id,
                        "env_kwargs": env_kwargs,
                        "horizon": int(group["horizon"].iloc[0]),
                        "agent": agent,
                        "memory_a": memory_a,
                        "bptt_length_a": bptt_a,
                        "memory_b": memory_b,
                        "bptt_length_b": bptt_b,
                        "n_a": len(x),
                        "n_b": len(y),
                        "prob_improvement": estimate,
                        "prob_improvement_ci_low": low,
                        "prob_improvement_ci_high": high,
                        "cpu": cpus(pd.concat([a["machine"], b["machine"]])),
                    }
                )
    frame = pd.DataFrame.from_records(records, columns=list(IMPROVEMENT_COLUMNS))
    for column in ("bptt_length_a", "bptt_length_b"):
        frame[column] = frame[column].astype("Int64")
    return frame


def schema_markdown() -> str:
    """The column schemas as Markdown tables (for ``leaderboards/README.md``)."""
    parts = []
    for title, columns in (
        ("`<suite>.csv`: one row per cell", CELL_COLUMNS),
        ("`<suite>_runs.csv`: one row per run", RUN_COLUMNS),
        (
            "`<suite>_horizon.csv`: the longest horizon learned (suites with several horizons)",
            HORIZON_COLUMNS,
        ),
        ("`<suite>_improvement.csv`: kind against kind, per env variant and agent", IMPROVEMENT_COLUMNS),
        (
            "`<suite>_credit.csv`: memory length against credit length (suites that cross them)",
            credit.CREDIT_COLUMNS,
        ),
        (
            "`<suite>_credit_model.csv`: how each kind's steps to solve grow with each length",
            credit.MODEL_COLUMNS,
        ),
    ):
        lines = [f"### {title}", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{name}` | {kind} | {meaning} |" for name, (kind, meaning) in columns.items()]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
