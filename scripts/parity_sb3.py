"""Our recurrent PPO against sb3-contrib's RecurrentPPO on MaskedCartPole, side by side.

Both train in this one process, seed by seed and alternating, on one torch
thread, with rl-zoo3's tuned ``ppo_lstm`` settings for CartPoleNoVel-v1
(``agents/ppo.yaml``, entry MaskedCartPole-v0: 8 envs x 32 steps, one minibatch
of 256, 20 epochs, gamma 0.98, GAE lambda 0.8, learning rate linear from 1e-3,
clip range linear from 0.2, LSTM 64 with a separate critic LSTM, pi/vf [64],
ReLU, no orthogonal init, observation and reward normalisation) on
MaskedCartPole-v0 with ``obs_layout="zeroed"`` (rl-zoo3's CartPoleNoVel 4-d
layout). sb3-contrib runs on SB3's DummyVecEnv + VecNormalize (gamma 0.98, as
rl-zoo3 sets it); ours on the natively vectorized env.

Each trained policy is evaluated deterministically on 20 episodes (the same
reset seeds for both), from zero memory. Writes one row per (agent, seed) and
one summary row per agent (``seed = all``) with the interquartile mean of the
per-seed returns and its 95% percentile bootstrap interval
(``scipy.stats.bootstrap``, statistic ``scipy.stats.trim_mean(., 0.25)``), and
training env steps per second (evaluation excluded).

    python scripts/parity_sb3.py              # -> leaderboards/parity_sb3.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import pomdp_bench
from pomdp_bench.agents.ppo import PPO
from pomdp_bench.agents.sb3 import SB3RecurrentPPO
from pomdp_bench.harness.provenance import git_commit
from pomdp_bench.harness.suites import agent_hyperparams
from pomdp_bench.reporting.statistics import iqm_interval

ENV_ID = "MaskedCartPole-v0"
ENV_KWARGS = {"obs_layout": "zeroed"}
MEMORY = {"kind": "lstm", "hidden_size": 64}
COMMAND = "python scripts/parity_sb3.py"


def run(agent: str, seed: int, timesteps: int, eval_episodes: int) -> dict:
    cls = PPO if agent == "pomdp_bench" else SB3RecurrentPPO
    model = cls(
        ENV_ID, MEMORY, env_kwargs=ENV_KWARGS, seed=seed, device="cpu", **agent_hyperparams("ppo", ENV_ID)
    )
    t0 = time.perf_counter()
    model.learn(timesteps)
    seconds = time.perf_counter() - t0
    returns = model.evaluate(eval_episodes, seed=10_000 + seed)
    return dict(
        env=ENV_ID,
        env_kwargs=str(ENV_KWARGS),
        agent=agent,
        memory="lstm",
        seed=str(seed),
        timesteps=model.num_timesteps,
        eval_episodes=len(returns),
        final_return=float(returns.mean()),
        return_iqm=np.nan,
        return_ci_low=np.nan,
        return_ci_high=np.nan,
        train_seconds=seconds,
        steps_per_second=model.num_timesteps / seconds,
        speedup=np.nan,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--timesteps", type=int, default=100_000, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="seeds to run")
    parser.add_argument("--eval-episodes", type=int, default=20, help="final evaluation episodes per run")
    parser.add_argument(
        "--out", type=Path, default=Path("leaderboards/parity_sb3.csv"), help="the CSV to write"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    rows = []
    for seed in args.seeds:
        for agent in ("pomdp_bench", "sb3_contrib"):
            row = run(agent, seed, args.timesteps, args.eval_episodes)
            rows.append(row)
            print(
                f"{agent:12s} seed {seed}: return {row['final_return']:6.1f}  "
                f"{row['steps_per_second']:7.0f} env-steps/s  ({row['train_seconds']:.0f} s)",
                flush=True,
            )

    per_run = pd.DataFrame(rows)
    summary = []
    for agent in ("pomdp_bench", "sb3_contrib"):
        mine = per_run[per_run.agent == agent]
        iqm, low, high = iqm_interval(mine.final_return.to_numpy())
        summary.append(
            dict(
                env=ENV_ID,
                env_kwargs=str(ENV_KWARGS),
                agent=agent,
                memory="lstm",
                seed="all",
                timesteps=int(mine.timesteps.iloc[0]),
                eval_episodes=int(mine.eval_episodes.sum()),
                final_return=float(mine.final_return.mean()),
                return_iqm=iqm,
                return_ci_low=low,
                return_ci_high=high,
                train_seconds=float(mine.train_seconds.sum()),
                steps_per_second=float(mine.steps_per_second.mean()),
                speedup=np.nan,
            )
        )
    # Speed-up per seed: both agents trained back to back under the same load.
    ours = per_run[per_run.agent == "pomdp_bench"].steps_per_second.to_numpy()
    theirs = per_run[per_run.agent == "sb3_contrib"].steps_per_second.to_numpy()
    per_run.loc[per_run.agent == "pomdp_bench", "speedup"] = ours / theirs
    summary[0]["speedup"] = float(np.mean(ours / theirs))
    table = pd.concat([per_run, pd.DataFrame(summary)], ignore_index=True)
    table["pomdp_bench_version"] = pomdp_bench.__version__
    table["git_commit"] = git_commit()
    table["command"] = COMMAND
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.6g")

    a, b = summary
    print(f"\n{'agent':12s} {'IQM':>7s} {'95% CI':>17s} {'env-steps/s':>12s}")
    for s in summary:
        print(
            f"{s['agent']:12s} {s['return_iqm']:7.1f} [{s['return_ci_low']:6.1f}, {s['return_ci_high']:6.1f}] "
            f"{s['steps_per_second']:12.0f}"
        )
    speedup = a["speedup"]
    print(f"speed-up (mean over seeds of ours/theirs): {speedup:.2f}x (target >= 5x)")
    print(
        f"our interval {'is not' if a['return_ci_low'] >= b['return_ci_low'] else 'IS'} below theirs "
        f"(lower ends {a['return_ci_low']:.1f} vs {b['return_ci_low']:.1f})"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
