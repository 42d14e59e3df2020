"""Settings tuned for a task with Optuna: ``python -m pomdp_bench.tune``.

Each trial samples an agent's settings (its rl-zoo3-style search space in the agent registry), trains
``seeds`` runs with the early-stopping rule (:mod:`~pomdp_bench.harness.stopping`)
under a cap, and scores the trial by its training *seconds to solve* (the default;
``--objective steps``: its env steps to solve): the mean over seeds, a run that did
not solve counting as its cap times ``penalty`` (censored: it would have needed
more). Optuna minimises that. Steps alone can prefer settings that are slow per step
(many epochs over long pieces): one study's best at T-Maze corridor 20 trained at 355
env steps/s where the published settings run at 2,100.

Seeds run one after another within a trial, so Optuna's median pruner can stop a
trial whose first seeds already score worse than the median of earlier trials; trials
run side by side, one worker process each (``--workers``). Runs train in worker
processes on one torch thread, as in a sweep.

The best settings are printed, and written to ``<out>/<study>.yaml``, as an entry for
``agents/<agent>.yaml`` with a comment giving the command, the number of trials and
the measured steps or seconds to solve. The best is the lowest-scoring completed trial
among those in which some run solved. A study in which no run solved has no best: it
says so, writes nothing and exits with 1. Needs the ``[tune]`` extra (``optuna``).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import shlex
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from pomdp_bench.agents.registry import agent_names, get_agent
from pomdp_bench.envs.cards import get_card, load_cards
from pomdp_bench.harness.backends import init_worker
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.stopping import StopRule
from pomdp_bench.harness.suites import parse_env_kwargs
from pomdp_bench.memory import MEMORY_KINDS, tuning_space
from pomdp_bench.validation import add_old_name


def sample_settings(trial: Any, agent: str, horizon: int) -> tuple[dict[str, Any], int]:
    """One trial's settings and the memory's hidden size, from ``agent``'s search space
    in the agent registry (:class:`~pomdp_bench.agents.registry.AgentEntry.search_space`).

    Raises:
        ValueError: an unknown agent, or one without a search space.
    """
    return get_agent(agent).load_search_space()(trial, horizon)


def memory_config(trial: Any, kind: str, hidden: int) -> dict[str, Any]:
    """The trial's memory: ``kind`` at ``hidden`` units, with the settings the kind's own
    tuning space samples (:func:`~pomdp_bench.memory.register_memory`'s ``tuning``)."""
    return tuning_space(trial, kind, hidden)


def run_value(result: RunResult, cap: int, penalty: float, objective: str = "steps") -> float:
    """A run's steps (``objective="steps"``) or training seconds (``"seconds"``) to solve;
    a run that did not solve counts as its cap times ``penalty`` (in seconds: the cap at
    the run's own speed), and a failed run as infinitely slow."""
    if result.status != "ok":
        return math.inf
    if objective == "seconds":
        if result.solved_seconds is not None:
            return float(result.solved_seconds)
        return cap / result.steps_per_second * penalty
    return float(result.solved_steps) if result.solved_steps is not None else cap * penalty


def _execute(spec_data: dict[str, Any]) -> dict[str, Any]:
    from pomdp_bench.harness.training import execute

    return execute(RunSpec.from_dict(spec_data)).to_dict()


class Objective:
    """Optuna's objective: the mean over seeds of :func:`run_value` (see the module docstring)."""

    def __init__(self, args: argparse.Namespace, pool: ProcessPoolExecutor, horizon: int) -> None:
        self.args, self.pool, self.horizon = args, pool, horizon

    def __call__(self, trial: Any) -> float:
        import optuna

        args = self.args
        hp, hidden = sample_settings(trial, args.agent, self.horizon)
        memory = memory_config(trial, args.memory, hidden)
        settings_class = get_agent(args.agent).load_settings_class()
        try:
            settings_class.make(memory=memory, **hp).resolve(hp["n_envs"])
        except (TypeError, ValueError) as err:
            trial.set_user_attr("invalid", str(err))
            raise optuna.TrialPruned(f"invalid settings: {err}") from err
        values: list[float] = []
        for seed in range(args.seeds):
            spec = RunSpec(
                env_id=args.env,
                env_kwargs=args.env_kwargs,
                agent=args.agent,
                memory=memory,
                bptt_length=None,
                seed=seed,
                total_timesteps=args.steps,
                hyperparams=hp,
                eval_episodes=args.eval_episodes,
                horizon=self.horizon,
                stop=StopRule().to_dict(),
            )
            result = RunResult(**self.pool.submit(_execute, spec.to_dict()).result())
            values.append(run_value(result, args.steps, args.penalty, args.objective))
            trial.set_user_attr(f"seed_{seed}", result.stop_reason or result.status)
            trial.report(sum(values) / len(values), seed)
            if trial.should_prune():
                raise optuna.TrialPruned(f"after {seed + 1} seed(s): {values}")
        return sum(values) / len(values)


def _solved_seeds(trial: Any) -> int:
    """How many of a trial's runs stopped as solved (its ``seed_<i>`` attributes)."""
    return sum(v == "solved" for k, v in trial.user_attrs.items() if k.startswith("seed_"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pomdp_bench.tune",
        description="Tune an agent's settings for one task with Optuna: fastest to solve.",
        allow_abbrev=False,  # --seed is an error, not --seeds
    )
    parser.add_argument("--env", required=True, help="env id, e.g. TMaze-v1")
    parser.add_argument(
        "--env-kwargs",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="the env's kwargs (default: its card's): KEY=VALUE pairs, each VALUE read as YAML, or one "
        "YAML or JSON mapping, e.g. --env-kwargs corridor_length=20",
    )
    parser.add_argument(
        "--agent",
        choices=[name for name in agent_names() if get_agent(name).search_space is not None],
        default="ppo",
        help="a registered agent with a search space (default ppo)",
    )
    parser.add_argument(
        "--memory", choices=MEMORY_KINDS, default="gru", help="the memory kind to tune it with (default gru)"
    )
    parser.add_argument("--trials", type=int, default=50, help="Optuna trials (default 50)")
    parser.add_argument("--seeds", type=int, default=3, help="runs per trial (default 3)")
    parser.add_argument("--steps", type=int, default=200_000, help="cap of each run, env steps")
    parser.add_argument(
        "--penalty", type=float, default=2.0, help="an unsolved run counts as cap x this (default 2)"
    )
    parser.add_argument(
        "--objective",
        choices=("seconds", "steps"),
        default="seconds",
        help="minimise training seconds to solve (default), which also counts what an update costs, "
        "or env steps to solve (settings that solve in few steps can be slow per step)",
    )
    parser.add_argument(
        "--horizon", type=int, help="memory horizon (default: the env card's, for these kwargs)"
    )
    parser.add_argument("--eval-episodes", type=int, default=20, help="final evaluation episodes per run")
    parser.add_argument("--workers", type=int, default=1, help="trials side by side, a process each")
    parser.add_argument(
        "--results", default="results/tune", metavar="DIR", help="folder of the Optuna storage and the result"
    )
    add_old_name(parser, "--out", "--results", "results")
    parser.add_argument("--study", help="study name (default: <agent>_<memory>_<env>_<kwargs>)")
    parser.add_argument("--storage", help="Optuna storage URL (default: sqlite:///<results>/optuna.sqlite)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        import optuna
    except ImportError:
        parser.error("tuning needs optuna: pip install 'pomdp-bench[tune]'")
    if args.env not in load_cards():
        parser.error(f"unknown env id {args.env!r}; known: {sorted(load_cards())}")
    for name in ("trials", "seeds", "steps", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    try:
        args.env_kwargs = parse_env_kwargs(args.env_kwargs)
    except ValueError as err:
        parser.error(str(err))
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    kwargs_text = "_".join(f"{k}{v}" for k, v in sorted(args.env_kwargs.items()))
    study_name = args.study or "_".join(filter(None, [args.agent, args.memory, args.env, kwargs_text]))
    storage = args.storage or f"sqlite:///{out / 'optuna.sqlite'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=study_name,
        storage=storage,
        load_if_exists=True,  # a rerun resumes the study
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0),
    )
    # The horizon of these env kwargs (the card's formula), unless given.
    horizon = int(args.horizon or get_card(args.env).horizon_for(args.env_kwargs))
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=ctx, initializer=init_worker) as pool:
        study.optimize(
            Objective(args, pool, horizon), n_trials=args.trials, n_jobs=args.workers, show_progress_bar=True
        )
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        print(f"study {study_name}: no trial completed (all pruned or failed)", file=sys.stderr)
        return 1
    solving = [t for t in done if _solved_seeds(t)]
    if not solving:
        print(
            f"study {study_name}: no run of its {len(done)} completed trial(s) solved within its cap of "
            f"{args.steps} steps (each hit the cap or plateaued), so there is no best and nothing is "
            "written; raise --steps, or tune an easier variant first (--env-kwargs)",
            file=sys.stderr,
        )
        return 1
    # Only a trial that solved can be best: an unsolved run's score is a penalty, and with
    # --objective seconds a fast one that never solves could score below one that did.
    best = min(solving, key=lambda t: t.value)
    fixed = optuna.trial.FixedTrial(best.params)
    hp, hidden = sample_settings(fixed, args.agent, horizon)
    memory = memory_config(fixed, args.memory, hidden)
    command = "python -m pomdp_bench.tune " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    solved = all(v == "solved" for k, v in best.user_attrs.items() if k.startswith("seed_"))
    comment = [
        f"# Tuned: {command}",
        f"# {len(study.trials)} trials ({len(done)} completed), {args.seeds} seeds each, cap {args.steps} steps;",
        f"# best: mean {args.objective} to solve {best.value:.{0 if args.objective == 'steps' else 1}f}"
        + ("" if solved else f" (some seeds did not solve: they count as cap x {args.penalty})")
        + f", memory {memory}.",
    ]
    entry = yaml.safe_dump({args.env: hp}, sort_keys=False, default_flow_style=None)
    text = "\n".join(comment) + "\n" + entry
    (out / f"{study_name}.yaml").write_text(text)
    print(text)
    print(
        f"written to {out / f'{study_name}.yaml'}; paste it into agents/{get_agent(args.agent).tuned_file}.yaml",
        file=sys.stderr,
    )
    return 0
