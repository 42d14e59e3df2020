"""The sweep: ``python -m pomdp_bench.run --suite memory``.

Expands a suite (``suites/<name>.yaml``) into runs, skips the runs already in
the results store, executes the rest on a local process pool or on Ray, writes
each run to the store the moment it finishes, then regenerates the suite's
leaderboard CSVs and figures. Interrupt it at any point and rerun the same
command: it picks up where it stopped.

Several processes may sweep into one store at once (on one machine or sharing a
folder): each claims a run in the store just before training it and skips runs
another process has claimed (see :meth:`ResultStore.claim`). When its own work is
done, a process waits for the runs others still hold, and takes over any whose
owner stopped sending heartbeats for the claim timeout (a dead process; at once
when the owner was a process of this host that has exited), so the suite
finishes while one process survives, and rerunning a killed sweep resumes at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pomdp_bench.agents.registry import agent_names, check_agent_name, get_agent
from pomdp_bench.envs.cards import load_cards
from pomdp_bench.harness import climb, provenance, seed_stages
from pomdp_bench.harness.beside import PUBLISHED_STORE, check_comparable, copy_published, unique, with_kinds
from pomdp_bench.harness.cells import cell_id
from pomdp_bench.harness.estimate import describe, estimate
from pomdp_bench.harness.kernels import KERNEL_SETTINGS
from pomdp_bench.harness.kernels import check_supported as check_kernels_supported
from pomdp_bench.harness.progress import SweepProgress
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import (
    CLAIM_TIMEOUT_ENV,
    DEFAULT_CLAIM_TIMEOUT,
    STORE_FILENAME,
    Heartbeat,
    ResultStore,
    StoreError,
    claim_timeout,
    owner_alive,
)
from pomdp_bench.harness.suites import (
    Suite,
    available_suites,
    env_source,
    expand,
    load_suite,
    parse_env_kwargs,
    suite_imports,
)
from pomdp_bench.imports import import_modules, split_source
from pomdp_bench.memory import memory_kinds
from pomdp_bench.validation import add_old_name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pomdp_bench.run",
        description="Train every memory kind of a suite across envs, BPTT lengths and seeds; "
        "store the runs and publish leaderboards.",
        allow_abbrev=False,  # --seed is an error, not --seeds
    )
    parser.add_argument(
        "--suite",
        help="suite name (the main job: memory), or the path of a suite YAML file; see --list",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the suites, envs, agents and memory kinds, then exit"
    )
    parser.add_argument(
        "--env", "--envs", dest="envs", nargs="+", metavar="ID", help="only these env ids (--envs: the same)"
    )
    parser.add_argument(
        "--agent",
        "--agents",
        dest="agents",
        nargs="+",
        metavar="AGENT",
        help="only these agents (registered names: see --list; --agents: the same)",
    )
    parser.add_argument(
        "--env-kwargs",
        nargs="+",
        metavar="KEY=VALUE",
        help="only the env entries whose kwargs (the card's defaults and the entry's env_kwargs) hold "
        "these, e.g. corridor_length=10; KEY=VALUE pairs (VALUE read as YAML) or one YAML or JSON "
        "mapping, as on tune. It selects entries and changes none",
    )
    parser.add_argument(
        "--memory",
        nargs="+",
        metavar="KIND",
        help="only these memory kinds (a kind of your own as module:kind, or with --import)",
    )
    parser.add_argument(
        "--beside-published",
        nargs="?",
        const=str(PUBLISHED_STORE),
        default=None,
        metavar="DIR",
        help="run the --memory kinds in every env entry of the suite, with its settings, seeds and "
        "caps, beside its published runs (copied from DIR, default leaderboards/store, never "
        "retrained): the report puts their rows in the published table",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first, here and in every worker (repeatable): a module that registers "
        "a memory kind of your own (pomdp_bench.memory.register_memory). Importing runs its code.",
    )
    parser.add_argument("--bptt", nargs="+", type=int, metavar="L", help="only these BPTT / sequence lengths")
    parser.add_argument("--seeds", type=int, metavar="N", help="seeds per cell (default: the suite's)")
    parser.add_argument(
        "--steps", type=int, metavar="N", help="env steps per run (default: the suite's or the env card's)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local worker processes, one torch thread each (default: the CPU count; with "
        "--device cuda, the GPU count)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="where runs train: cpu (default; the published numbers), cuda (each local worker "
        "gets a GPU of its own; on Ray, each run asks for one), or cuda:N. Part of each run's key.",
    )
    parser.add_argument(
        "--kernels",
        choices=sorted(KERNEL_SETTINGS),
        default=None,
        help="the CPU kernel path runs train on: native (the CPU's own choice), or avx2 or sse41, "
        "one path on any x86-64 CPU that has it (docs/reproducibility.md). Default: the suite's "
        "kernels: setting, else native. Part of each run's key when not native.",
    )
    parser.add_argument(
        "--backend", choices=("local", "ray"), default="local", help="where runs execute (default: local)"
    )
    parser.add_argument(
        "--address", help="Ray cluster address for --backend ray (default: start a local Ray)"
    )
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="folder of the results store (default: results/)"
    )
    add_old_name(parser, "--out", "--results", "results")
    parser.add_argument(
        "--leaderboards",
        metavar="DIR",
        help="where to write the suite's CSVs and figures (default: <results>/leaderboards/)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the runs and an estimated time, run nothing"
    )
    parser.add_argument("--retry-failed", action="store_true", help="rerun runs stored as failed")
    parser.add_argument(
        "--claim-timeout",
        type=float,
        metavar="S",
        help="seconds without a heartbeat after which a run claimed by another process sharing "
        f"the store counts as abandoned and is taken over (default: ${CLAIM_TIMEOUT_ENV} or "
        f"{DEFAULT_CLAIM_TIMEOUT:.0f})",
    )
    parser.add_argument("--no-report", action="store_true", help="do not write leaderboards after the sweep")
    parser.add_argument(
        "--cards",
        metavar="DIR",
        help="a folder of env card YAMLs (envs/*.yaml's format) for envs of your own; their ids "
        "must be registered, or the cards give entry_point",
    )
    return parser


def _check_device(parser: argparse.ArgumentParser, device: str) -> int:
    """Refuse a device torch cannot use here; return the number of GPUs torch sees."""
    if device != "cpu" and not (device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit())):
        parser.error(f"--device must be cpu, cuda or cuda:N, got {device!r}")
    if device == "cpu":
        return 0
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        parser.error(f"--device {device}: torch sees no GPU on this machine; use --device cpu")
    if device.startswith("cuda:") and int(device[5:]) >= count:
        parser.error(f"--device {device}: torch sees {count} GPU(s), cuda:0 to cuda:{count - 1}")
    return count


def _print_list(cards: str | None = None) -> None:
    print("suites:")
    outside: dict[str, tuple[str, RunSpec]] = {}  # env id -> (suite, a spec) for envs without a card
    for name in available_suites():
        suite = load_suite(name)
        summary = suite.description.strip().splitlines()[0]
        try:
            specs = expand(suite, cards=cards)
        except (ValueError, TypeError) as err:  # e.g. an outside env whose package is missing
            print(f"  {name:12s}   n/a runs  {summary}\n{'':21s}cannot expand here: {err}")
            continue
        print(f"  {name:12s} {len(specs):5d} runs  {summary}")
        for spec in specs:
            if spec.card is not None and spec.env_id not in outside:
                outside[spec.env_id] = (name, spec)
    print("envs:")
    for env_id, card in sorted(load_cards().items()):
        print(
            f"  {env_id:20s} horizon {card.memory_horizon:4d}  optimal {card.optimal_return:8.1f}  "
            f"ceiling {card.ff_ceiling:8.2f} ({card.ff_ceiling_source})"
        )
    if outside:
        print("outside envs of the suites (cards implicit or given by the suite):")
        for env_id, (name, spec) in sorted(outside.items()):
            card = spec.env_card()
            optimum = f"{card.optimal_return:8.1f}" if card.optimum_known else " unknown"
            ceiling = (
                f"{card.ff_ceiling:8.2f} ({card.ff_ceiling_source})"
                if card.ceiling_known
                else "the suite's memory=none cells (empirical)"
            )
            source = f"import {spec.env_import}" if spec.env_import else "registered"
            print(f"  {env_id:40s} suite {name}, {source}; optimal {optimum}  ceiling {ceiling}")
    print("agents:")
    for name in agent_names():
        print(f"  {name:12s} {get_agent(name).description}")
    print("memory kinds: " + ", ".join(memory_kinds()))


def _dry_run(specs: list[RunSpec], out: Path, args: argparse.Namespace) -> int:
    """Print the runs still to do and an estimated time with its interval
    (:mod:`~pomdp_bench.harness.estimate`); reads the store if there is one and writes nothing."""
    rows: list[dict[str, Any]] = []
    suite = load_suite(args.suite)
    skip = {"ok"} | (set() if args.retry_failed else {"failed"})
    climb_next: list[RunSpec] | None = None  # the climb's next rungs, read from the store
    if (out / STORE_FILENAME).is_file():
        try:
            with ResultStore(out) as store:
                rows = store.rows()
                if suite.climb:
                    climb_next, _ = climb.next_rungs(store, suite.name, specs, skip, suite.seed_stages)
        except StoreError as err:
            print(f"python -m pomdp_bench.run: error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
    done = {row["key"]: row["status"] for row in rows}
    todo = [s for s in specs if done.get(s.key()) not in skip]
    n_failed_before = sum(1 for s in specs if done.get(s.key()) == "failed")
    for spec in todo:
        print(spec.label() + f"  ({spec.total_timesteps} steps)")
    failed_note = (
        f", {n_failed_before} of them failed (see --retry-failed)"
        if n_failed_before and not args.retry_failed
        else ""
    )
    print(f"\n{len(todo)} of {len(specs)} runs to do ({len(specs) - len(todo)} stored{failed_note}).")
    est = estimate(todo, rows, suite=suite.name)
    print("\n".join(describe(est, args.backend, args.workers, os.cpu_count())))
    if suite.climb:
        nxt = (
            climb_next
            if climb_next is not None
            else [s for s in climb.first_rungs(specs) if done.get(s.key()) not in skip]
        )
        best = describe(estimate(nxt, rows, suite=suite.name), args.backend, args.workers, os.cpu_count())[0]
        print(
            f"The climb (climb: true) runs a ladder's next horizon only once the last is learned: "
            f"the estimate above is its worst case, every rung. Its least, the next rungs of the "
            f"{len(climb.ladders(specs))} ladders as the store stands ({len(nxt)} runs): {best}"
        )
    if suite.seed_stages and args.seeds is None:
        cells = {tuple(cell_id(s)) for s in specs}
        print(
            f"Then borderline cells grow to {', then '.join(map(str, suite.seed_stages))} seeds "
            f"(seed_stages): not in the estimate; at most {len(cells)} cells and "
            f"{len(cells) * suite.seed_stages[-1] - len(specs)} more runs."
        )
    return 0


def _print_imports(suite: Suite, cards: str | None) -> None:
    """Say which modules the suite imports (:func:`suite_imports`), on stderr, before any
    is imported: an import runs that module's code."""
    modules = suite_imports(suite, cards)
    if modules:
        print(
            f"This suite imports code from: {', '.join(modules)} "
            "(an import runs that module's code, like pip install)",
            file=sys.stderr,
            flush=True,
        )


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _kwargs_hint(suite: Suite, envs: list[str] | None, env_kwargs: dict[str, Any]) -> str:
    """What the suite's entries (of ``envs``, if given) set, when ``--env-kwargs`` matched none."""
    if not env_kwargs:
        return ""
    entries = sorted(
        {
            f"{env_source(env)[0]} {_json(env.get('env_kwargs') or {})}"
            for group in suite.groups
            for env in group["envs"]
            if not envs or env_source(env)[0] in envs
        }
    )
    return f": no env entry has the kwargs {_json(env_kwargs)}; the entries set: {'; '.join(entries)}"


def _memory_filter(kinds: list[str] | None, imports: list[str]) -> list[str] | None:
    """``--memory``'s kinds, bare, after importing ``--import``'s modules and the module of
    each ``module:kind``; each must then be registered. A ``module:kind``'s module is added
    to ``imports`` (``--import``'s list), so that the workers import it too.

    Raises:
        ValueError: a module that does not import, or an unknown kind (the message lists
            the registered kinds and says how to add one).
    """
    if imports:
        print(f"importing {', '.join(imports)} (--import; an import runs its code)", file=sys.stderr)
    import_modules(imports, what="--import")
    if kinds is None:
        return None
    bare = []
    for kind in kinds:
        module, name = split_source(kind)
        if module is not None:
            import_modules([module], what=f"--memory {kind}")
            if module not in imports:  # a worker imports it too (RunSpec.imports)
                imports.append(module)
        if name not in memory_kinds():
            raise ValueError(
                f"--memory: unknown kind {name!r}; registered: {list(memory_kinds())}. A kind of your "
                "own: --import MODULE (the module that registers it), or --memory module:kind"
            )
        bare.append(name)
    return bare


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _stop_on_signals() -> dict[int, Any]:
    """Stop a sweep on SIGTERM as on Ctrl-C: the claims of the runs in flight are released
    and the sweep's record closed. SIGINT stops it too where a shell started it in the
    background, which ignores SIGINT. Returns the handlers to put back (none off the main
    thread, where Python cannot set them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    return old


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:  # the user's modules first: they register kinds that --memory and --list name
        args.memory = _memory_filter(args.memory, args.imports)
    except ValueError as err:
        parser.error(str(err))
    if args.list:
        _print_list(args.cards)
        return 0
    if args.suite is None:  # a bare call starts nothing long: it says what there is
        _print_list(args.cards)
        print(
            "\nchoose a suite, e.g. python -m pomdp_bench.run --suite memory (the main job) "
            "or --suite smoke (two minutes); add --dry-run to see the runs and the time first",
            file=sys.stderr,
        )
        return 2
    gpus = _check_device(parser, args.device)
    if args.workers is None:
        args.workers = gpus if args.device == "cuda" and gpus else (os.cpu_count() or 1)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    for name, value in (("--seeds", args.seeds), ("--steps", args.steps)):
        if value is not None and value < 1:
            parser.error(f"{name} must be >= 1, got {value}")
    for agent in args.agents or ():
        try:
            check_agent_name(agent)
        except ValueError as err:
            parser.error(f"--agent: {err}")
    try:
        env_kwargs = parse_env_kwargs(args.env_kwargs)
    except ValueError as err:
        parser.error(str(err))
    try:  # a suite's or a card's mistake is one line, not a traceback
        suite = load_suite(args.suite)  # parsed and checked as data; nothing imported yet
        if args.kernels is None:
            args.kernels = suite.kernels
        _print_imports(suite, args.cards)  # before expand(), which imports them
        if args.envs:
            named = {env_source(env)[0] for group in suite.groups for env in group["envs"]}
            unknown = sorted(set(args.envs) - named)
            if unknown:
                parser.error(f"env ids {unknown} are not in suite {suite.name!r}; its envs: {sorted(named)}")
        beside = None
        if args.beside_published is not None:
            if not args.memory:
                parser.error("--beside-published needs --memory: the kinds of your own to run")
            beside = ResultStore(Path(args.beside_published))
            suite_cells = [cell_id(s) for s in expand(suite, seeds=1, cards=args.cards)]
            suite = with_kinds(suite, args.memory)
        specs = expand(
            suite,
            envs=args.envs,
            agents=args.agents,
            memory=args.memory,
            bptt=args.bptt,
            seeds=args.seeds,
            steps=args.steps,
            device=args.device,
            cards=args.cards,
            env_kwargs=env_kwargs,
            kernels=args.kernels,
            imports=args.imports,
        )
        check_kernels_supported(args.kernels)
        if suite.climb:
            climb.check_ladders(specs)
            climb.ladders(specs)  # two cells of one ladder at one horizon are refused here
        if beside is not None:
            specs = unique(specs)
            paired = check_comparable(specs, beside.rows(suite.name))
            print(
                f"suite {suite.name}: {paired} of {len(specs)} runs of {', '.join(args.memory)} stand beside "
                f"published runs of the same entry and seed",
                file=sys.stderr,
            )
    except (ValueError, TypeError, StoreError) as err:
        parser.error(str(err))
    if not specs:
        parser.error("the filters leave no run in the suite" + _kwargs_hint(suite, args.envs, env_kwargs))
    out = Path(args.results)
    if args.dry_run:  # writes nothing, not even an empty store
        return _dry_run(specs, out, args)
    try:
        timeout = claim_timeout(args.claim_timeout)
        store = ResultStore(out)
    except (StoreError, ValueError) as err:
        parser.error(str(err))
    skip = {"ok"} | (set() if args.retry_failed else {"failed"})
    todo = _not_done(store, specs, skip)
    climb_stages = () if args.seeds is not None else suite.seed_stages  # a climb grows rung by rung
    if suite.climb:  # each ladder's next rung only (climb.py); the rest waits on its verdicts
        todo, _ = climb.next_rungs(store, suite.name, specs, skip, climb_stages)

    store.link(suite.name, specs)
    store.link(suite.name, todo)  # a climb's grown rungs' new seeds
    # The whole suite's cells, filters aside: reports read the suite's coverage from the store.
    cells = [cell_id(s) for s in expand(suite, seeds=1, cards=args.cards)]
    if beside is not None:  # the published cells too, and their runs, never retrained
        cells = suite_cells + [c for c in cells if c not in suite_cells]
        copied = copy_published(store, beside, suite.name)
        print(
            f"suite {suite.name}: {copied} published runs copied from {beside.path.parent}", file=sys.stderr
        )
    store.declare_cells(suite.name, cells)
    command = "python -m pomdp_bench.run " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    commit, host = provenance.git_commit(), provenance.machine(args.kernels)
    sweep_id = store.start_sweep(suite.name, command, commit, host)
    stored = len(specs) - len(_not_done(store, specs, skip))
    waiting = ", the climb's next rungs; the rest wait on their verdicts" if suite.climb else ""
    print(
        f"suite {suite.name}: {len(specs)} runs, {stored} already stored, {len(todo)} to run{waiting} "
        f"on {args.backend}" + ("" if args.backend == "ray" else f" with {args.workers} worker(s)"),
        file=sys.stderr,
    )
    if todo:  # the first number a newcomer sees: how long this will take
        est = estimate(todo, store.rows(), suite=suite.name)
        print(describe(est, args.backend, args.workers, os.cpu_count())[0], file=sys.stderr, flush=True)
    start = time.perf_counter()
    progress = SweepProgress(len(todo))
    backend = None
    handlers = _stop_on_signals()
    stopped = ""
    try:
        if args.backend == "ray":
            from pomdp_bench.harness.backends import RayBackend

            backend = RayBackend(args.address)
        else:
            from pomdp_bench.harness.backends import LocalBackend

            backend = LocalBackend(args.workers, gpus=gpus if args.device == "cuda" else 0)
        with Heartbeat(out, store.owner, timeout / 4):
            # The suite's seeds first; then the seed stages' runs, one stage at a time
            # (seed_stages.py), beginning with any stage a sweep cut short left unfinished.
            stages = iter(() if args.seeds is not None or suite.climb else suite.seed_stages)
            unfinished = _not_done(store, seed_stages.unfinished_stage_runs(store, suite.name, specs), skip)
            store.link(suite.name, unfinished)
            progress.grow(len(unfinished))
            batch = todo + unfinished
            tried: set[str] = set()  # a climb never offers a run twice in one sweep
            while True:
                tried |= {spec.key() for spec in batch}
                for spec, result in _claimed_runs(
                    backend, store, batch, progress, timeout, args.retry_failed
                ):
                    store.write(spec, result, git_commit=commit, machine=host)  # and releases its claim
                    progress.finished(spec, result)
                batch = []
                for stage in stages:  # the next stage that grows a cell
                    grow = seed_stages.cells_to_grow(store, suite.name, stage)
                    batch = _not_done(store, seed_stages.grown_specs(specs, grow, stage), skip)
                    if batch:
                        store.link(suite.name, batch)
                        progress.grow(len(batch))
                        print(
                            f"suite {suite.name}: {len(grow)} cells whose verdict one run could flip "
                            f"grow to {stage} seeds ({len(batch)} runs)",
                            file=sys.stderr,
                            flush=True,
                        )
                        break
                if not batch and suite.climb:  # the rungs whose ladders are learned so far
                    batch, where = climb.next_rungs(store, suite.name, specs, skip, climb_stages)
                    batch = [spec for spec in batch if spec.key() not in tried]
                    if batch:
                        store.link(suite.name, batch)  # a grown rung's new seeds join the suite
                        progress.grow(len(batch))
                        climbing = sorted({w for w in where.values() if w.startswith(("runs", "grows"))})
                        print(
                            f"suite {suite.name}: the climb goes on, {len(batch)} runs "
                            f"({'; '.join(climbing)})",
                            file=sys.stderr,
                            flush=True,
                        )
                if not batch:
                    break
        if suite.climb:
            _, where = climb.next_rungs(store, suite.name, specs, skip, climb_stages)
            for ladder, state in sorted(where.items()):
                print(f"suite {suite.name}: climb {' '.join(ladder)}: {state}", file=sys.stderr)
    except KeyboardInterrupt as err:  # Ctrl-C, SIGINT or SIGTERM (_stop_on_signals)
        stopped = str(err) or "Ctrl-C"
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        store.release()  # the claims of runs cut short (an exception, Ctrl-C, SIGTERM)
        progress.close()
        store.finish_sweep(sweep_id, time.perf_counter() - start, progress.done)
        if backend is not None and hasattr(backend, "shutdown"):
            backend.shutdown()
    wall = time.perf_counter() - start
    if stopped:
        print(
            f"suite {suite.name}: stopped by {stopped} after {progress.done} runs in {wall / 60:.1f} min; "
            "the runs in flight were dropped, and the same command resumes",
            file=sys.stderr,
        )
        store.close()
        return 130
    print(
        f"suite {suite.name}: ran {progress.done} runs in {wall / 60:.1f} min, {progress.failed} failed"
        + (" (rerun with --retry-failed)" if progress.failed else ""),
        file=sys.stderr,
    )
    if not args.no_report:
        from pomdp_bench.reporting.report import write_reports

        target = Path(args.leaderboards) if args.leaderboards else out / "leaderboards"
        paths = write_reports(out, target, [suite.name])
        print(f"leaderboards written to {target}/ ({len(paths)} files)", file=sys.stderr)
    store.close()
    return 0


def _not_done(store: ResultStore, specs: list[RunSpec], skip: set[str]) -> list[RunSpec]:
    """Those of ``specs`` whose stored status is not in ``skip``."""
    done = store.status(s.key() for s in specs)
    return [s for s in specs if done.get(s.key()) not in skip]


def _claimed_runs(
    backend: Any,
    store: ResultStore,
    todo: list[RunSpec],
    progress: SweepProgress,
    timeout: float,
    retry_failed: bool,
) -> Any:
    """Run ``todo`` on ``backend``, claiming each run just before it starts; yields
        ``(spec, result)`` as runs end.

        A run another process holds is skipped. Once the rest are done, this waits for the
        held runs: it polls the claims every ``min(timeout / 4, 5)`` seconds, saying what it
        waits for, and starts another round over the runs whose claim is gone (stored, or
        released) or stale (no heartbeat for ``timeout`` seconds, or an owner on this host
    that has exited); :meth:`ResultStore.claim`
        then decides each. It ends when every run is stored, by this process or another.
    """
    failed_before = provenance.now()
    held: dict[str, RunSpec] = {}

    def claim(spec: RunSpec) -> bool:
        outcome = store.claim(spec.key(), timeout, retry_failed, failed_before)
        if outcome == "held":
            held[spec.key()] = spec
        else:
            held.pop(spec.key(), None)
        if outcome == "done":
            progress.skipped(spec, "stored by another process")
        return outcome == "claimed"

    specs = todo
    while specs:
        yield from backend.run(specs, progress, claim)
        specs = _wait_for_claims(store, held, timeout, progress)


def _wait_for_claims(
    store: ResultStore, held: dict[str, RunSpec], timeout: float, progress: SweepProgress
) -> list[RunSpec]:
    """Wait until a run in ``held`` is no longer claimed by a live owner; returns those
    runs (empty when ``held`` is)."""
    poll = min(timeout / 4, 5.0)
    said, said_at = "", 0.0
    while held:
        claims = {c["key"]: c for c in store.claims()}
        free = [
            spec
            for key, spec in held.items()
            if key not in claims
            or claims[key]["age"] >= timeout
            or claims[key]["owner"] == store.owner
            or not owner_alive(claims[key]["owner"])
        ]
        if free:
            return free
        owners = sorted({claims[k]["owner"] for k in held})
        message = (
            f"waiting for {len(held)} run(s) claimed by other process(es) ({', '.join(owners)}); "
            f"a claim without a heartbeat for {timeout:.0f} s is taken over"
        )
        if message != said or time.monotonic() - said_at >= 30:
            oldest = max(claims[k]["age"] for k in held)
            print(f"{message} (oldest heartbeat {oldest:.0f} s ago)", file=progress.stream, flush=True)
            said, said_at = message, time.monotonic()
        time.sleep(poll)
    return []


if __name__ == "__main__":
    sys.exit(main())
