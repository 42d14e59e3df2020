"""The analysis step: what a store's trained agents do beyond their final evaluation.

    python -m pomdp_bench.analyse --results leaderboards/store --suite horizon

Reporting reads the store and never builds an agent; this step does, once per run, and
stores what it finds in the store's ``analyses`` table, keyed by run key and analysis.
Nothing retrains: each run's agent is its stored final weights
(:meth:`ResultStore.load_agent`). The analyses (:data:`ANALYSES`):

- ``probes`` (:mod:`~pomdp_bench.harness.probes`): how well a linear probe reads the cue
  from the memory's output, at the decision step and on the way there;
- ``generalisation`` (:mod:`~pomdp_bench.harness.generalisation`): the return at 2x and
  4x the training horizon;
- ``success`` (:mod:`~pomdp_bench.harness.success`): the share of fresh episodes that
  succeed, for an env scored by success (its card gives ``success_kwargs``: Key-to-Door);
- ``behaviour`` (:mod:`~pomdp_bench.harness.tmaze_behaviour`): what the greedy policy
  does on the passive T-Maze, per cue: the walk, the turn, the arm.

The first two apply to runs of passive T-Maze and cue recall
(:mod:`~pomdp_bench.harness.cue_tasks`), the third to envs with a success measure, the
fourth to the passive T-Maze; any other run is stored as ``skipped`` with the reason, as
is a run without weights. A
second call skips every (run, analysis) already stored, so an interrupted analysis
resumes; an analysis that raised is stored as ``failed`` with its error, and the step
goes on to the next run (``retry_failed`` tries those again). The episodes come from
fixed seeds, so the same store gives the same numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import traceback
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pomdp_bench.harness import generalisation, probes, provenance, success, tmaze_behaviour, weight_files
from pomdp_bench.harness.cue_tasks import CueTask, cue_task
from pomdp_bench.harness.published import POINTER_FILE
from pomdp_bench.harness.store import ResultStore

ANALYSES: tuple[str, ...] = ("probes", "generalisation", "success", "behaviour")
"""The analyses this step runs, by the name the store keeps them under."""


@dataclass(frozen=True)
class AnalysisSettings:
    """How many fresh episodes each analysis takes.

    Attributes:
        probe_episodes: episodes a probe fits and tests on (cross-validated), default
            :data:`probes.DEFAULT_EPISODES`.
        eval_episodes: episodes per longer horizon, and for the success rate, default
            :data:`generalisation.DEFAULT_EPISODES`.
        behaviour_episodes: greedy T-Maze episodes for the behaviour, default
            :data:`tmaze_behaviour.DEFAULT_EPISODES`.
    """

    probe_episodes: int = probes.DEFAULT_EPISODES
    eval_episodes: int = generalisation.DEFAULT_EPISODES
    behaviour_episodes: int = tmaze_behaviour.DEFAULT_EPISODES

    def __post_init__(self) -> None:
        for name in ("probe_episodes", "eval_episodes", "behaviour_episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise ValueError(f"{name} must be an int >= 2, got {value!r}")


@dataclass
class AnalysisSummary:
    """What one call of :func:`analyse_store` did: ``counts[(analysis, status)]`` of the
    analyses it stored (``ok``, ``failed``, ``skipped``), and ``already``, the (run,
    analysis) pairs it found stored and left alone."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    already: int = 0

    def line(self) -> str:
        """One line for the command's output."""
        parts = [f"{analysis} {status} {n}" for (analysis, status), n in sorted(self.counts.items())]
        return "; ".join([*parts, f"already stored {self.already}"])


def check_analyses(analyses: Iterable[str]) -> tuple[str, ...]:
    """``analyses`` as a tuple, each checked.

    Raises:
        ValueError: an unknown analysis (the message lists :data:`ANALYSES`), or none.
    """
    chosen = tuple(analyses)
    unknown = [a for a in chosen if a not in ANALYSES]
    if unknown or not chosen:
        raise ValueError(f"unknown analysis {unknown or chosen!r}; valid: {list(ANALYSES)}")
    return chosen


@dataclass(frozen=True)
class _EnvTask:
    """What the success and behaviour analyses play: the run's env, kwargs and carried card."""

    env_id: str
    env_kwargs: dict[str, Any]
    card: dict[str, Any] | None


def _not_applicable(row: dict[str, Any], analysis: str, has_weights: bool) -> str | CueTask | _EnvTask:
    """The run's task for ``analysis`` (a cue task, or the env to score by success), or
    why ``analysis`` does not apply to the run."""
    spec = row["spec"]
    if row["status"] != "ok":
        return "the run failed: there is no trained agent"
    if not has_weights:
        return "the run has no stored weights (stored before runs kept them)"
    if analysis == "behaviour":
        if spec["env_id"] not in tmaze_behaviour.ENV_IDS or spec.get("env_wrappers"):
            return f"the behaviour reads the bare passive T-Maze ({list(tmaze_behaviour.ENV_IDS)}), not {spec['env_id']}"
        return _EnvTask(spec["env_id"], dict(spec.get("env_kwargs") or {}), spec.get("card"))
    if analysis == "success":
        try:
            success.success_kwargs(spec["env_id"], spec.get("card"))
        except (KeyError, ValueError) as err:
            return str(err).strip("'\"")
        return _EnvTask(spec["env_id"], dict(spec.get("env_kwargs") or {}), spec.get("card"))
    try:
        task = cue_task(spec["env_id"], spec["env_kwargs"], spec.get("card"))
    except ValueError as err:
        return str(err)
    if analysis == "probes" and spec.get("env_wrappers"):
        return "probes read the cue from the bare env's first observation; this run wraps its env"
    return task


def analyse_run(
    store: ResultStore, row: dict[str, Any], analyses: Iterable[str], settings: AnalysisSettings
) -> dict[str, tuple[str, dict[str, Any], str]]:
    """Run ``analyses`` on one stored run (a :meth:`ResultStore.rows` row).

    Returns:
        ``{analysis: (status, value, error)}``: ``ok`` with the result's data, ``skipped``
        with the reason it does not apply, or ``failed`` with the error's last lines.
    """
    out: dict[str, tuple[str, dict[str, Any], str]] = {}
    has_weights = store.weights(row["key"]) is not None
    tasks = {a: _not_applicable(row, a, has_weights) for a in analyses}
    for analysis, task in tasks.items():
        if isinstance(task, str):
            out[analysis] = ("skipped", {}, task)
    wanted = [a for a, t in tasks.items() if not isinstance(t, str)]
    if not wanted:
        return out
    try:
        agent = store.load_agent(row["key"])
    except Exception as err:  # a run that cannot load is recorded; the step goes on
        return {**out, **{a: ("failed", {}, _error_text(err)) for a in wanted}}
    try:
        for analysis in wanted:
            task = tasks[analysis]
            assert isinstance(task, (CueTask, _EnvTask))
            if analysis == "probes" and not probes.trunks_of(agent):
                reason = f"agent {row['spec']['agent']!r} keeps no memory block to probe (a Trunk, or a module with an encoder and a memory)"
                out[analysis] = ("skipped", {}, reason)
                continue
            try:
                out[analysis] = ("ok", _run_one(agent, analysis, task, row["spec"], settings), "")
            except Exception as err:  # recorded per run
                out[analysis] = ("failed", {}, _error_text(err))
    finally:
        close = getattr(getattr(agent, "env", None), "close", None)
        if callable(close):  # the training copies load_agent built
            close()
    return out


def _run_one(
    agent: Any, analysis: str, task: CueTask | _EnvTask, spec: dict[str, Any], settings: AnalysisSettings
) -> dict[str, Any]:
    if analysis == "behaviour":
        assert isinstance(task, _EnvTask)
        corridor = int(task.env_kwargs.get("corridor_length", 10))  # the env's default
        return tmaze_behaviour.play_tmaze(agent, corridor, n_episodes=settings.behaviour_episodes).to_dict()
    if isinstance(task, _EnvTask):
        return success.evaluate_success(
            agent, task.env_id, task.env_kwargs, task.card, n_episodes=settings.eval_episodes
        ).to_dict()
    if analysis == "probes":
        return probes.probe_agent(agent, task, n_episodes=settings.probe_episodes).to_dict()
    return generalisation.generalise(agent, task, spec["memory"], n_episodes=settings.eval_episodes).to_dict()


def _error_text(err: BaseException) -> str:
    lines = traceback.format_exception_only(type(err), err)
    return "".join(lines).strip()[-2000:]


def analyse_store(
    results: str | Path,
    suites: Iterable[str] | None = None,
    analyses: Iterable[str] = ANALYSES,
    settings: AnalysisSettings | None = None,
    retry_failed: bool = False,
    progress: bool = False,
) -> AnalysisSummary:
    """Analyse every run of ``suites`` (default: every suite) in the store at ``results``
    that has not been analysed yet, storing each result as it comes.

    Args:
        results: the results folder holding ``results.sqlite``.
        suites: the store's suites whose runs to analyse.
        analyses: which of :data:`ANALYSES`.
        settings: episodes per analysis (default :class:`AnalysisSettings`).
        retry_failed: analyse again the (run, analysis) pairs stored as ``failed``.
        progress: show a tqdm progress bar over the runs.

    Raises:
        ValueError: a suite the store does not hold, or an unknown analysis (each
            message lists what is valid).
    """
    from tqdm.auto import tqdm

    chosen = check_analyses(analyses)
    settings = settings or AnalysisSettings()
    summary = AnalysisSummary()
    commit, host = provenance.git_commit(), provenance.machine()
    with ResultStore(results) as store:
        held = store.suites()
        names = list(suites) if suites is not None else held
        unknown = sorted(set(names) - set(held))
        if unknown:
            raise ValueError(f"the store at {results} holds no suite {unknown}; it holds {held}")
        rows: dict[str, dict[str, Any]] = {}
        for suite in names:
            rows.update({r["key"]: r for r in store.rows(suite)})
        todo = []
        for key in sorted(rows):
            stored = rows[key]["analyses"]
            left = [
                a for a in chosen if a not in stored or (retry_failed and stored[a]["status"] == "failed")
            ]
            summary.already += len(chosen) - len(left)
            if left:
                todo.append((key, left))
        if store.published is not None:  # published weights not fetched: say so, store nothing
            absent = weight_files.missing(store.published.weights, [key for key, _ in todo])
            if absent:
                raise ValueError(
                    f"the published weights of {len(absent)} run(s) to analyse are not in "
                    f"{store.published.weights} (e.g. {absent[0]}); get them with "
                    f"`python -m pomdp_bench.weights fetch --results {results}`"
                )
        for key, left in tqdm(todo, desc="analyse", unit="run", disable=not progress):
            for analysis, (status, value, error) in analyse_run(store, rows[key], left, settings).items():
                store.write_analysis(key, analysis, status, value, error, git_commit=commit, machine=host)
                summary.counts[(analysis, status)] += 1
    return summary


def _blas_threads(threads: int) -> Any:
    """A context that holds numpy's and scipy's BLAS pools to ``threads`` (threadpoolctl,
    which scikit-learn brings); a no-op without it."""
    try:
        import sklearn.linear_model  # noqa: F401  (loads scipy's BLAS, so the limit reaches it)
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m pomdp_bench.analyse``."""
    parser = argparse.ArgumentParser(
        prog="python -m pomdp_bench.analyse",
        description=__doc__.splitlines()[0],
        allow_abbrev=False,
    )
    parser.add_argument(
        "--results", required=True, help="the results folder holding results.sqlite (e.g. leaderboards/store)"
    )
    parser.add_argument(
        "--suite",
        action="append",
        help="analyse only the runs of this suite of the store (repeatable; default: every suite)",
    )
    parser.add_argument(
        "--analysis",
        action="append",
        choices=ANALYSES,
        help=f"run only this analysis (repeatable; default: all of {', '.join(ANALYSES)})",
    )
    parser.add_argument(
        "--probe-episodes",
        type=int,
        default=probes.DEFAULT_EPISODES,
        help=f"fresh episodes each probe fits and tests on, cross-validated (default {probes.DEFAULT_EPISODES})",
    )
    parser.add_argument(
        "--eval-episodes",
        type=int,
        default=generalisation.DEFAULT_EPISODES,
        help=f"fresh episodes per longer horizon (default {generalisation.DEFAULT_EPISODES})",
    )
    parser.add_argument(
        "--behaviour-episodes",
        type=int,
        default=tmaze_behaviour.DEFAULT_EPISODES,
        help=f"greedy T-Maze episodes the behaviour counts (default {tmaze_behaviour.DEFAULT_EPISODES})",
    )
    parser.add_argument(
        "--retry-failed", action="store_true", help="analyse again the runs whose analysis failed before"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="threads for torch and for the probes' BLAS (default 1)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Analyse a store's runs (:func:`analyse_store`); prints what it stored."""
    import torch

    parser = build_parser()
    args = parser.parse_args(argv)
    if not any((Path(args.results) / name).is_file() for name in ("results.sqlite", POINTER_FILE)):
        parser.error(f"no results store at {Path(args.results) / 'results.sqlite'}")
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    try:
        settings = AnalysisSettings(args.probe_episodes, args.eval_episodes, args.behaviour_episodes)
        with _blas_threads(args.threads):  # the probes' fits: a busy BLAS pool spins on loaded CPUs
            summary = analyse_store(
                args.results,
                args.suite,
                args.analysis or ANALYSES,
                settings,
                retry_failed=args.retry_failed,
                progress=not args.no_progress,
            )
    except ValueError as err:
        parser.error(str(err))
    print(summary.line())
    return 0
