"""Study (issue 21): where a T-Maze run spends its steps (walk, turn, cue); results in docs/notes/tmaze-corridor-100.md.

Where does a T-Maze run spend its steps: walking the corridor, turning, or the cue? (issue 21)

Trains one run of ``studies/tmaze100_heldout.py``'s corridor-100 lstm cell (a variant,
a held-out seed; no stop rule, the whole cap), or with ``--active KIND`` the memory
suite's active T-Maze cell of that kind, and at ``--points`` evenly spaced points plays
256 fresh episodes with the policy as it samples in training and 256 as it acts in
evaluation (the most likely action), printing one JSON line per point (:func:`phases`):

- ``walk``: the median step at which an episode first leaves the optimal walk ("right"
  all along; in the active maze "left" to the oracle first);
- ``looked``: the fraction that saw the cue (always 1 in the passive maze);
- ``on_time``: the fraction at the junction or in an arm for the last step (in the
  passive maze, which has no spare step, those that walked on schedule);
- ``turn``: of those, the fraction that end in an arm;
- ``cue``: of those, the fraction that end in the goal arm (``return`` = ``on_time``
  times ``cue``);
- in the passive maze, the policy and critic at the junction per cue (:func:`junction`):
  the turn probabilities and the critic's values, which tell a run that will never turn
  (``right_p`` 1.0000) from one whose actor lacks the cue that its critic holds.

    python studies/tmaze_phases.py --variant base --seed 6
    python studies/tmaze_phases.py --active lstm --seed 5
    python studies/tmaze_phases.py --active lstm --bptt 6 --seed 5

Measured (docs/notes/tmaze-corridor-100.md and docs/notes/tmaze-active.md): in
the corridor-100 recipe the sampled walk lengthens by about 20 steps every 250k env
steps, and once it reaches the junction the turn and then the cue follow within about
0.5M steps. In the active maze the sampled policy stops stepping back to the cue
within 50k steps and does not do it again. In a corridor-100 run that failed at 0.46
(the recipe, seed 12) the actor's ``turn_cue_grad`` was 0.2-0.4, as in solved runs,
while its turn had collapsed on one arm: the cue was learnable, the other arm too rarely
sampled. A run trains as the held-out run of its seed in ``tmaze100_heldout.py`` did (the
agent keeps that run's seed; the probes use ``predict``'s own random stream): with
``--variant ent0.01-ukl0.001-keep4-rise --seed 16`` it fails at 0.54 as that run did, its
goal arm for cue up at 0.01 when sampled walks first reach the junction on time (1.25M
steps) and its turn collapsed on down for both cues by 1.5M.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tmaze100_heldout import FIRST_HELD_OUT_SEED, VARIANTS, suite_file

from pomdp_bench.envs.tmaze import TMazeVectorEnv
from pomdp_bench.harness.suites import expand, load_suite
from pomdp_bench.harness.training import build_agent

RIGHT, UP, LEFT, DOWN = 0, 1, 2, 3
EPISODES = 256


def phases(
    model: Any, corridor: int, deterministic: bool, seed: int, active: bool = False
) -> dict[str, float]:
    """What ``EPISODES`` fresh episodes of ``model`` do, from the observations alone.

    ``walk``: the median step at which an episode first leaves the optimal walk
    ("right" all along; in the active maze "left" to the oracle first), its length when
    it never does. ``looked``: the fraction that saw the cue (always 1 in the passive
    maze). ``on_time``: the fraction at the junction or in an arm (observation
    ``[1, *]``) for the last step; in the passive maze, those that walked on schedule.
    ``turn`` and ``cue``: of those, the fractions that end in an arm, and in the goal
    arm (reward 1). ``return``: the final step's mean reward.
    """
    env = TMazeVectorEnv(num_envs=EPISODES, corridor_length=corridor, active=active)
    optimal = [LEFT] * active + [RIGHT] * (corridor + active)  # the walk to the junction
    obs, _ = env.reset(seed=seed)
    looked = obs[:, 1] != 0  # [B] the oracle's cue is in sight (passive: at step 0)
    state, start = None, np.ones(EPISODES, dtype=bool)
    left_walk = np.full(EPISODES, len(optimal))  # [B] first step off the optimal walk
    for t in range(len(optimal) + 1):  # the episode: the walk, then the turn
        if t == len(optimal):
            arrived = obs[:, 0] == 1  # [B] at the junction or in an arm for the last step
        action, state = model.predict(obs, state, start, deterministic=deterministic)
        if t < len(optimal):
            off = (action != optimal[t]) & (left_walk == len(optimal))
            left_walk = np.where(off, t, left_walk)
        start = np.zeros(EPISODES, dtype=bool)
        obs, reward, *_ = env.step(action)  # autoreset NEXT_STEP: the last obs is the final one
        looked |= (obs[:, 0] == 0) & (obs[:, 1] != 0)
    env.close()
    in_arm = arrived & (obs[:, 0] == 1) & (obs[:, 1] != 0)
    reached = max(int(arrived.sum()), 1)
    return {
        "walk": float(np.median(left_walk)),
        "looked": float(looked.mean()),
        "on_time": float(arrived.mean()),
        "turn": float(in_arm.sum() / reached),
        "cue": float((arrived & (reward == 1)).sum() / reached),
        "return": float(reward.mean()),
    }


def junction(model: Any, corridor: int) -> dict[str, Any]:
    """The passive maze's policy and critic along the optimal walk, per cue (no sampling).

    Feeds a PPO's networks the observations of an episode that walks on schedule (the cue
    at step 0, the corridor, the junction at step ``corridor``), for each cue, and reads
    off: ``walk_p``, the probability that the policy as it samples walks the whole
    corridor on schedule (the product of its "right" probabilities; the mean over cues);
    ``up_p`` and ``down_p`` ``[cue up, cue down]``, the probabilities of turning up and
    down at the junction, and ``right_p``, of "right" there (into the wall: no turn);
    ``junction_value`` ``[cue up, cue down]``, the critic's value at the junction. In runs
    that sit at a return of 0, ``right_p`` is 1.0000 for one cue or both; in runs that
    turn without the cue the critic's values still tell the cues apart (1 and 0) while
    the turn probabilities do not. The memory does not read actions, so one pass per
    action gives that action's probability at every step.

    ``turn_cue_grad`` and ``value_cue_grad`` (means over cues of absolute values): how
    far the cue at step 0 reaches the junction through each memory, as the derivative of
    the junction's ``log p(up) - log p(down)`` and of the critic's junction value with
    respect to the cue's input. An actor whose memory has lost the gradient path to the
    cue reads about 0 there, however its turn is trained.
    """
    steps = corridor + 1
    obs = np.zeros((steps, 2, 2), dtype=np.float32)  # [T, cue, D]
    obs[0, :, 1] = [1.0, -1.0]  # the cue: goal up, goal down
    obs[corridor, :, 0] = 1.0  # the junction
    obs = model.normalizer.obs(obs)
    policy = model.policy
    starts = torch.zeros(steps, 2, dtype=torch.bool)
    starts[0] = True
    # One pass per action, kept differentiable in the observations for the cue gradients.
    leaf = torch.as_tensor(obs).requires_grad_(True)
    log_probs = []
    with torch.enable_grad():
        for action in (RIGHT, UP, LEFT, DOWN):
            log_prob, _, values, _ = policy.evaluate_actions(
                leaf, torch.full((steps, 2), action), policy.initial_state(2), starts
            )
            log_probs.append(log_prob)
        # Each cue's episode is its own column, so a sum's gradient is per column.
        turn = (log_probs[UP] - log_probs[DOWN])[corridor].sum()
        (turn_grad,) = torch.autograd.grad(turn, leaf, retain_graph=True)
        (value_grad,) = torch.autograd.grad(values[corridor].sum(), leaf)
    right, up, _, down = (lp.detach().exp() for lp in log_probs)  # each [T, cue]
    values = values.detach()
    walk = right[:corridor].log().sum(0).exp()  # [cue]
    turn_cue_grad = float(turn_grad[0, :, 1].abs().mean())  # the cue's input at step 0
    value_cue_grad = float(value_grad[0, :, 1].abs().mean())
    return {
        "walk_p": round(float(walk.mean()), 3),
        "right_p": [round(float(p), 4) for p in right[corridor]],
        "up_p": [round(float(p), 4) for p in up[corridor]],
        "down_p": [round(float(p), 4) for p in down[corridor]],
        "junction_value": [round(float(v), 3) for v in values[corridor]],
        "turn_cue_grad": float(f"{turn_cue_grad:.3g}"),
        "value_cue_grad": float(f"{value_cue_grad:.3g}"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument(
        "--variant", default="base", choices=list(VARIANTS), help="the settings variant to run"
    )
    parser.add_argument("--seed", type=int, default=5, help="a held-out seed, 5 or more")
    parser.add_argument("--corridor", type=int, default=100, help="corridor length (pieces cover it)")
    parser.add_argument("--steps", type=int, default=3_000_000, help="the cap (the schedule's length)")
    parser.add_argument("--points", type=int, default=12, help="measurements over the cap")
    parser.add_argument(
        "--active",
        metavar="KIND",
        default=None,
        help="instead: the memory suite's active T-Maze cell of this memory kind (pieces that "
        "cover an episode, its cap), on the held-out seed; --variant, --corridor, --steps unused",
    )
    parser.add_argument(
        "--bptt",
        type=int,
        default=None,
        metavar="L",
        help="with --active: the cell with pieces of L (default: the one whose pieces cover an episode)",
    )
    parser.add_argument(
        "--set",
        default="{}",
        metavar="JSON",
        help="PPO settings laid over the cell's, e.g. '{\"ent_coef\": 0.1}'",
    )
    parser.add_argument("--out", default=None, help="JSON lines file to append to as well")
    args = parser.parse_args()
    if args.seed < FIRST_HELD_OUT_SEED:
        parser.error(f"held-out seeds are {FIRST_HELD_OUT_SEED} and up (the suite runs 0-4)")
    torch.set_num_threads(1)
    if args.active:
        cells = [
            s
            for s in expand(load_suite("memory"))
            if s.env_id == "TMazeActive-v1" and s.memory_kind == args.active and s.seed == 0
        ]
        if args.bptt is not None:
            lengths = sorted(s.bptt_length for s in cells if s.bptt_length is not None)
            cells = [s for s in cells if s.bptt_length == args.bptt]
            if not cells:
                parser.error(
                    f"the active T-Maze cells of {args.active!r} have pieces of {lengths}, not {args.bptt}"
                )
        if not cells:
            parser.error(f"the memory suite has no TMazeActive-v1 cell of kind {args.active!r}")
        spec = max(cells, key=lambda s: s.bptt_length or 0)  # pieces that cover an episode
        spec = dataclasses.replace(spec, seed=args.seed)
    else:
        hyperparams, bias = VARIANTS[args.variant]
        with tempfile.TemporaryDirectory() as folder:
            suite = suite_file(
                args.variant, hyperparams, Path(folder), args.corridor, args.steps, bias, args.seed + 1
            )
            spec = next(s for s in expand(load_suite(str(suite))) if s.seed == args.seed)
    # The run's own agent seed: dropping the stop rule (or --set) changes the spec's
    # hash, and with it RunSpec.agent_seed, which would make this another run than the
    # held-out run of the same seed. The probes draw from their own streams (predict's),
    # so with no --set the run trains as that held-out run did, up to where it stopped.
    agent_seed = spec.agent_seed()
    overrides = json.loads(args.set)
    spec = dataclasses.replace(spec, stop=None, hyperparams={**spec.hyperparams, **overrides})
    default = inspect.signature(TMazeVectorEnv).parameters["corridor_length"].default
    corridor = int(spec.env_kwargs.get("corridor_length", default))
    active = args.active is not None
    agent = build_agent(spec, seed=agent_seed)
    every, next_point, start = spec.total_timesteps // args.points, 0, time.perf_counter()

    def report(model: Any) -> None:
        cell = f"active-{args.active}" if active else args.variant
        row = {"cell": cell, "set": overrides, "seed": args.seed, "steps": int(model.num_timesteps)}
        row["seconds"] = round(time.perf_counter() - start, 1)
        for mode, deterministic in (("sampled", False), ("greedy", True)):
            episodes = phases(model, corridor, deterministic, seed=10_000 + row["steps"], active=active)
            for key, value in episodes.items():
                row[f"{mode}_{key}"] = round(value, 3)
        if not active:
            row.update(junction(model, corridor))
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")

    def callback(model: Any) -> bool:
        nonlocal next_point
        if model.num_timesteps >= next_point:
            next_point += every
            report(model)
        return True

    agent.learn(spec.total_timesteps, callback=callback)
    report(agent)


if __name__ == "__main__":
    main()
