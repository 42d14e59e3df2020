"""One run, start to finish: build the agent from a spec, train, evaluate, report.

This is what every backend executes, in a worker process or a Ray task. It
never raises: an exception or a non-finite return becomes a failed
:class:`RunResult` carrying the traceback, so the sweep records it and goes on.
"""

from __future__ import annotations

import io
import math
import time
import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from pomdp_bench.agents.common.seeding import check_seed
from pomdp_bench.agents.registry import get_agent
from pomdp_bench.envs import register_card
from pomdp_bench.envs.make import import_env_module
from pomdp_bench.harness.kernels import check_active as check_kernels
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.stopping import StopMonitor, StopRule, solve_threshold
from pomdp_bench.harness.train_curve import iteration_means
from pomdp_bench.imports import import_modules

# Called with (spec key, timesteps done, total) as training advances.
ProgressFn = Callable[[str, int, int], None]


def agent_settings(spec: RunSpec, seed: int | None = None) -> Any:
    """The settings ``spec``'s agent is built from: the hyperparameters (from
    ``agents/<agent>.yaml`` and the suite), then the run's memory, seed and BPTT length
    (the registry entry's ``sequence_field``: PPO's ``bptt_length``, SAC's
    ``sequence_length``) where the spec has one, winning over the hyperparameters'.
    ``seed``: the agent's seed instead of :meth:`RunSpec.agent_seed` (to repeat a run's
    draws under a changed spec)."""
    return get_agent(spec.agent).settings(
        spec.hyperparams,
        memory=spec.memory,
        seed=spec.agent_seed() if seed is None else seed,
        sequence_length=spec.bptt_length,
    )


def build_agent(spec: RunSpec, seed: int | None = None) -> Any:
    """The agent of ``spec``, constructed but not trained, on ``spec.device``; ``seed``
    as in :func:`agent_settings`."""
    settings = agent_settings(spec, seed)
    agent_class = get_agent(spec.agent).load_class()
    prepare_env(spec)
    return agent_class(
        spec.make_id,
        env_kwargs=spec.env_kwargs,
        env_wrappers=spec.env_wrappers,
        settings=settings,
        device=spec.device,
    )


def prepare_env(spec: RunSpec) -> None:
    """Make ``spec``'s env id known to Gymnasium in this process: its ``env_import``
    module imported, or, for a carried card whose id is not registered (a card added at
    run time in the parent process), the card's entry point registered."""
    if spec.env_import is not None:
        import_env_module(spec.make_id)
    if spec.card is None or spec.env_id in gym.registry:
        return
    card = spec.env_card()
    if not card.entry_point:
        raise ValueError(
            f"env {spec.env_id!r} is not registered with Gymnasium and its card has no entry_point; "
            "give the suite entry import: <the module that registers it>"
        )
    register_card(card)


def _save_bytes(agent: Any) -> bytes | None:
    """``agent.save``'s archive, without optimiser states, as bytes (the store keeps it
    with the run); None for an agent without ``save``."""
    if not callable(getattr(agent, "save", None)):
        return None
    buffer = io.BytesIO()
    agent.save(buffer, optimizers=False)
    return buffer.getvalue()


def execute(spec: RunSpec, progress: ProgressFn | None = None) -> RunResult:
    """Train and evaluate ``spec`` on one torch thread; failures come back as results.

    Without a stop rule the run trains its whole budget and is evaluated at
    ``eval_points`` evenly spaced points (``max(4, eval_episodes // 2)`` episodes each)
    for its curve. With one (:mod:`~pomdp_bench.harness.stopping`) it is evaluated on
    the rule's geometric schedule, each time on fresh episodes, and stops once solved
    or plateaued. Either way the final evaluation takes ``eval_episodes`` episodes of
    their own. The result carries the trained agent's save and its parameter count.
    """
    torch.set_num_threads(1)
    start = time.perf_counter()
    key, agent_seed = spec.key(), spec.agent_seed()  # hashes: once, not at every callback
    eval_seconds = 0.0
    curve: list[tuple[int, float]] = []
    try:
        check_kernels(spec.kernels)  # a pinned run never trains on another path
        import_modules(spec.imports, what="the run's import")  # they register its memory kind
        agent = build_agent(spec)
        rule = StopRule.from_any(spec.stop)
        monitor = None
        if rule is not None:
            card = spec.env_card()
            monitor = StopMonitor(
                rule,
                solve_threshold(card, spec.env_kwargs),
                card.ceiling_for(spec.env_kwargs),
                float(card.optimal_return),
                spec.total_timesteps,
            )
        every = max(1, spec.total_timesteps // max(spec.eval_points, 1))
        next_eval = every
        curve_episodes = max(4, spec.eval_episodes // 2)
        t_train = time.perf_counter()

        def callback(model: Any) -> bool:
            nonlocal next_eval, eval_seconds
            done = int(model.num_timesteps)
            if progress is not None:
                progress(key, done, spec.total_timesteps)
            if monitor is not None:
                if not monitor.due(done):
                    return True
                t0 = time.perf_counter()
                seed = check_seed(agent_seed, len(monitor.evaluations))
                score = float(np.mean(model.evaluate(monitor.episodes, seed=seed)))
                eval_seconds += time.perf_counter() - t0
                curve.append((done, score))
                trained = time.perf_counter() - t_train - eval_seconds
                return monitor.update(done, trained, score) is None
            if done >= next_eval and done < spec.total_timesteps:
                t0 = time.perf_counter()
                curve.append((done, float(np.mean(model.evaluate(curve_episodes)))))
                eval_seconds += time.perf_counter() - t0
                next_eval = (done // every + 1) * every
            return True

        agent.learn(spec.total_timesteps, callback=callback)
        train_seconds = time.perf_counter() - t_train - eval_seconds
        returns = np.asarray(agent.evaluate(spec.eval_episodes), dtype=np.float64)
        final = float(returns.mean())
        if not curve or curve[-1][0] != int(agent.num_timesteps):
            curve.append((int(agent.num_timesteps), final))
        if not math.isfinite(final):
            raise FloatingPointError(f"final evaluation return is {final}")
        return RunResult(
            status="ok",
            final_return=final,
            final_returns=returns.tolist(),
            curve=curve,
            steps_per_second=agent.num_timesteps / max(train_seconds, 1e-9),
            wall_seconds=time.perf_counter() - start,
            agent_seed=agent_seed,
            gradient_reach=reach.tolist()
            if (reach := getattr(agent, "gradient_reach", None)) is not None
            else None,
            stop_reason="" if monitor is None else (monitor.reason or "cap"),
            solved_steps=None if monitor is None else monitor.solved_steps,
            solved_seconds=None if monitor is None else monitor.solved_seconds,
            timesteps=int(agent.num_timesteps),
            parameters=getattr(agent, "num_parameters", None),
            weights=_save_bytes(agent),
            train_curve=iteration_means(getattr(agent, "episode_log", ())),
        )
    except Exception:  # a failed run is data, not a crash of the sweep
        return RunResult(
            status="failed",
            curve=curve,
            wall_seconds=time.perf_counter() - start,
            error=traceback.format_exc(),
            agent_seed=agent_seed,
        )
