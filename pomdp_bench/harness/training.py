"""One run, start to finish: build the agent from a spec, train, evaluate, report.

This is what every backend executes, in a worker process or a Ray task. It
never raises: an exception or a non-finite return becomes a failed
:class:`RunResult` carrying the traceback, so the sweep records it and goes on.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from pomdp_bench.harness.spec import RunResult, RunSpec

# Called with (spec key, timesteps done, total) as training advances.
ProgressFn = Callable[[str, int, int], None]


def build_agent(spec: RunSpec) -> Any:
    """The agent of ``spec``, constructed but not trained."""
    common: dict[str, Any] = dict(env_kwargs=spec.env_kwargs, seed=spec.agent_seed(), device="cpu")
    if spec.agent == "ppo":
        from pomdp_bench.agents.ppo import PPO

        return PPO(
            spec.env_id, memory=spec.memory, bptt_length=spec.bptt_length, **common, **spec.hyperparams
        )
    if spec.agent == "sac":
        from pomdp_bench.agents.sac import SAC

        # The spec's sequence length (when it has one) wins over the tuned file's.
        extra = {} if spec.bptt_length is None else {"sequence_length": spec.bptt_length}
        return SAC(spec.env_id, memory=spec.memory, **{**spec.hyperparams, **extra, **common})
    if spec.agent == "sb3_ppo":
        from pomdp_bench.agents.sb3 import SB3RecurrentPPO

        return SB3RecurrentPPO(spec.env_id, memory=spec.memory, **{**spec.hyperparams, **common})
    raise ValueError(f"unknown agent {spec.agent!r}")


def execute(spec: RunSpec, progress: ProgressFn | None = None) -> RunResult:
    """Train and evaluate ``spec`` on one torch thread; failures come back as results."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    eval_seconds = 0.0
    curve: list[tuple[int, float]] = []
    try:
        agent = build_agent(spec)
        every = max(1, spec.total_timesteps // max(spec.eval_points, 1))
        next_eval = every
        curve_episodes = max(4, spec.eval_episodes // 2)

        def callback(model: Any) -> bool:
            nonlocal next_eval, eval_seconds
            done = int(model.num_timesteps)
            if progress is not None:
                progress(spec.key(), done, spec.total_timesteps)
            if done >= next_eval and done < spec.total_timesteps:
                t0 = time.perf_counter()
                curve.append((done, float(np.mean(model.evaluate(curve_episodes)))))
                eval_seconds += time.perf_counter() - t0
                next_eval = (done // every + 1) * every
            return True

        t_train = time.perf_counter()
        agent.learn(spec.total_timesteps, callback=callback)
        train_seconds = time.perf_counter() - t_train - eval_seconds
        returns = np.asarray(agent.evaluate(spec.eval_episodes), dtype=np.float64)
        final = float(returns.mean())
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
            agent_seed=spec.agent_seed(),
            gradient_reach=reach.tolist()
            if (reach := getattr(agent, "gradient_reach", None)) is not None
            else None,
        )
    except Exception:  # a failed run is data, not a crash of the sweep
        return RunResult(
            status="failed",
            curve=curve,
            wall_seconds=time.perf_counter() - start,
            error=traceback.format_exc(),
            agent_seed=spec.agent_seed(),
        )
