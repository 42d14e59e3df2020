"""Study (issue 21): how often PPO-lstm solves T-Maze corridor 100 on held-out seeds; results in docs/notes/tmaze-corridor-100.md.

How reliable is the horizon suite's T-Maze recipe at corridor 100? (issue 21)

Runs lstm (hidden 32, ``init: forget_bias``, ``obs_skip``, pieces of 101, 3M-step caps,
the horizon suite's stop rule) on held-out seeds, never the suite's 0-4, under the
suite's settings and variants of them, and prints one JSON line per run (also appended
to ``--out``). Runs go one after another in this process, on one torch thread.

    python studies/tmaze100_heldout.py --variants base const1e-3 keep4 --seeds 5 6 7 8 9

Measured (docs/notes/tmaze-corridor-100.md), solved of seeds 5-9: base 2,
const1e-3 3, lin3e-3 3, gae0.99 2, keep4 3, keep4-const1e-3 1, envs128 0, epochs8 1,
hidden64 3, ent0.003 2, ent0 4 (and 2 of 5 on the suite's seeds 0-4), shared 0, gae1 1.
Of seeds 5-14: base 5 (2 of 5-9, 3 of 10-14), ent0.01 8, lrfloor 6, ent0.01-envs32 3 of 9
(seed 9 not run; 5 of the others sat at 0), ent0.03-envs32 2 of 4 (seeds 5, 6, 10, 11),
ent0.01-eps0.01 3 (4 sat at 0), ent0.01-eps0.004 6, ent0.01-clip0.3 0 of 1 (seed 10),
ent0.01-ukl0.001 8, ent0.01-ukl0.001-keep4 8 (the suite's recipe from commit 265de7d),
ent0.01-ukl0.001-keep4-shared 8, ent0.01-keep4 4 of 6 (seeds 5-10),
ent0.01-ukl0.001-keep4-envs32 6 (a seventh ended at its cap at 1.0; one sat at 0), and
ent0.01-ukl0.001-keep4 with ``--steps 7000000`` 3 of 5 (seeds 5, 10-13; one sat at 0;
stopped there). On an Intel Xeon (the runs above: an AMD EPYC), seeds 5-34:
ent0.01-ukl0.001-keep4 23 of 30 (8 of 5-14, 9 of 15-24, 6 of 25-34; one more ended at
its cap at 1.0); ent0.01-ukl0.001-keep4-rise (PPO's ``clip_rise="probability"``) 23 of
30 too (one more at its cap at 1.0), median 1.67M steps against 1.84M; ent0.01-keep4-rise
5 of 5-14 (four sat at 0); ent0.01-ukl0.001-keep4-epochs2 1 of 8 (stopped). Of seeds 5-9:
ent0.01-ukl0.003 3, ent0.01-norm 2, ent0.01-norm-envs32 1 of 3, ent0.01-prevreward 1
of 4, ent0.01-prevreward-envs32 0 of 3 (stopped early where fewer). ``ent0.01-nonorm``
is ent0.01 with other random draws (the T-Maze entry never normalised observations).
Other memories, on the EPYC (stopped early, each worse than the recipe's rate could
explain by chance): gru-chrono-ent0.01-ukl0.001 0 of 2 (seeds 5, 6: 0.52, 0.55, turning
without the cue), the same without obs_skip 0 of 2 (0.53, 0.46); framestack101 0 of 3
(seeds 5-7: -0.48, -0.04, -0.02, walking late or never turning) and
framestack101-ent0.01-ukl0.001 0 of 3 (-0.06, -0.08, 0.59).

The variants ``keep4*`` set the keep-gate bias of ``init: forget_bias`` to 4 instead of 2
(the lstm's ``gate_bias``: an untrained state then keeps sigmoid(4) = 98% a step, 16%
over 100 steps, against 3e-6). Up to commit 3a50480 the bias was a process global
(``rnn.FORGET_BIAS``), not in the cell, so runs of those variants made with it (all
but ent0.01-ukl0.001-keep4-shared) had other random draws than the script gives now.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from pomdp_bench.harness.suites import expand, load_suite
from pomdp_bench.harness.training import execute

# The previous reward times the corridor's length: a step behind schedule reads -1.
_PREVIOUS_REWARD = {"path": "pomdp_bench.envs.wrappers:PreviousReward", "kwargs": {"scale": 100}}

# gru as in the horizon suite's cue-recall cell at delay 100
_GRU_CHRONO = {"kind": "gru", "hidden_size": 32, "init": "chrono", "timescale": 100}

# Seeds from here on are held out: the suite runs 0-4.
FIRST_HELD_OUT_SEED = 5

# name -> (PPO hyperparameters over the suite's, keep-gate bias; "wrappers": the env's)
VARIANTS: dict[str, tuple[dict[str, Any], float]] = {
    "base": ({}, 2.0),
    "const1e-3": ({"learning_rate": 1.0e-3}, 2.0),
    "lin3e-3": ({"learning_rate": "lin_3e-3"}, 2.0),
    "gae0.99": ({"gae_lambda": 0.99}, 2.0),
    "keep4": ({}, 4.0),
    "keep4-const1e-3": ({"learning_rate": 1.0e-3}, 4.0),
    "envs128": ({"n_envs": 128}, 2.0),
    "epochs8": ({"n_epochs": 8}, 2.0),
    "hidden64": ({"memory_hidden_size": 64}, 2.0),  # the lstm's width, not a PPO setting
    "ent0.003": ({"ent_coef": 0.003}, 2.0),
    "ent0": ({"ent_coef": 0.0}, 2.0),
    # one memory for actor and critic: the critic's value targets depend on the cue at
    # every corridor step, a dense signal to carry it, where the actor's own memory
    # learns only from the turn at the junction
    "shared": ({"shared_memory": True}, 2.0),
    # Monte Carlo advantages: the critic sees only observations, which do not say
    # whether the agent has fallen behind schedule, so a bootstrapped advantage (lambda
    # 0.95) charges a wrong step in the corridor about 1/(1 - 0.99 * 0.95) = 17 of the
    # 100 penalties it causes, and none of the lost final reward
    "gae1": ({"gae_lambda": 1.0}, 2.0),
    "ent0.01": ({"ent_coef": 0.01}, 2.0),
    "lrfloor": ({"learning_rate": {"linear": [2.0e-3, 5.0e-4]}}, 2.0),
    # Meant to turn observation normalisation off, but the T-Maze entry never had it on:
    # this is ent0.01 again with other random draws (the settings hash differently)
    "ent0.01-nonorm": ({"ent_coef": 0.01, "normalize_observations": False}, 2.0),
    # half the copies: twice the updates in a cap, for a walk that lengthens per update
    "ent0.01-envs32": ({"ent_coef": 0.01, "n_envs": 32}, 2.0),
    # twice the updates for the walk, with the band's larger bonus to keep the turn explored
    "ent0.03-envs32": ({"n_envs": 32}, 2.0),
    # a wider clip: PPO's ratio clip bounds how fast "right" can grow each update
    "ent0.01-clip0.3": ({"ent_coef": 0.01, "clip_range": 0.3}, 2.0),
    # an epsilon-soft policy: the turn at the junction keeps a probability of at least
    # 2 * eps / 4 however firmly the corridor taught "right" (runs that sit at 0 never turn)
    "ent0.01-eps0.01": ({"ent_coef": 0.01, "epsilon_soft": 0.01}, 2.0),
    "ent0.01-eps0.004": ({"ent_coef": 0.01, "epsilon_soft": 0.004}, 2.0),
    "ent0.01-lrfloor": ({"ent_coef": 0.01, "learning_rate": {"linear": [2.0e-3, 5.0e-4]}}, 2.0),
    # running observation statistics (off in the T-Maze entry): the rare junction flag
    # (one step in 101) and the cue (one step in 101) become about +10, the corridor's
    # zeros about -0.1, so the junction no longer looks like the corridor to the heads
    "ent0.01-norm": ({"ent_coef": 0.01, "normalize_observations": True}, 2.0),
    "ent0.01-norm-envs32": ({"ent_coef": 0.01, "normalize_observations": True, "n_envs": 32}, 2.0),
    # the previous reward beside the observation (pomdp_bench.envs.wrappers:PreviousReward,
    # a penalty step reads -1): the critic sees whether the walk is behind schedule
    "ent0.01-prevreward": ({"ent_coef": 0.01, "wrappers": [_PREVIOUS_REWARD]}, 2.0),
    "prevreward": ({"wrappers": [_PREVIOUS_REWARD]}, 2.0),
    "ent0.01-prevreward-envs32": ({"ent_coef": 0.01, "n_envs": 32, "wrappers": [_PREVIOUS_REWARD]}, 2.0),
    # a log barrier, KL(uniform || pi): runs that sit at 0 have a junction "right" of
    # probability 1.0000, where the entropy bonus's pull on the turns has vanished
    "ent0.01-ukl0.001": ({"ent_coef": 0.01, "uniform_kl_coef": 0.001}, 2.0),
    "ent0.01-ukl0.003": ({"ent_coef": 0.01, "uniform_kl_coef": 0.003}, 2.0),
    "ent0.01-ukl0.01": ({"ent_coef": 0.01, "uniform_kl_coef": 0.01}, 2.0),
    "ent0.01-ukl0.003-envs32": ({"ent_coef": 0.01, "uniform_kl_coef": 0.003, "n_envs": 32}, 2.0),
    # with the barrier, the keep gates opened further: an untrained state keeps 16% of the
    # cue over 100 steps (runs that walk and turn but fail have an actor memory without the
    # cue, while their critic's memory holds it)
    "ent0.01-ukl0.001-keep4": ({"ent_coef": 0.01, "uniform_kl_coef": 0.001}, 4.0),
    # the control: the keep gates without the barrier
    "ent0.01-keep4": ({"ent_coef": 0.01}, 4.0),
    # and one memory for actor and critic: in failed runs the critic's memory held the cue
    "ent0.01-ukl0.001-keep4-shared": (
        {"ent_coef": 0.01, "uniform_kl_coef": 0.001, "shared_memory": True},
        4.0,
    ),
    # the recipe with 32 copies: twice the updates for the walk, which with the bonus alone
    # solved fast (0.69M-1.01M) but left 5 of 9 runs in the junction trap the barrier removes
    "ent0.01-ukl0.001-keep4-envs32": ({"ent_coef": 0.01, "uniform_kl_coef": 0.001, "n_envs": 32}, 4.0),
    # the recipe with rises clipped in probability (PPOSettings.clip_rise): failed runs'
    # turns had collapsed on one arm (the other at 5e-4), and the ratio clip lets a sample
    # of that arm with an advantage of +1 raise it only to 6e-4 an update
    "ent0.01-ukl0.001-keep4-rise": (
        {"ent_coef": 0.01, "uniform_kl_coef": 0.001, "clip_rise": "probability"},
        4.0,
    ),
    "ent0.01-keep4-rise": ({"ent_coef": 0.01, "clip_rise": "probability"}, 4.0),
    # the recipe with slower updates: the turn collapses on one arm within about 0.25M
    # steps of the first on-time walks, faster than the cue's direction is learned
    "ent0.01-ukl0.001-keep4-epochs2": ({"ent_coef": 0.01, "uniform_kl_coef": 0.001, "n_epochs": 2}, 4.0),
    # gru with chrono init at the horizon's timescale, the memory that learned cue recall at
    # delay 100 (5 of 5), with the recipe's bonus and barrier: gru's T-Maze failures sat at
    # a return of 0 (never turning), the trap the barrier removes. "memory" replaces the
    # lstm's memory entry when it names a kind, else some of its keys.
    "gru-chrono-ent0.01-ukl0.001": (
        {"ent_coef": 0.01, "uniform_kl_coef": 0.001, "memory": _GRU_CHRONO},
        2.0,
    ),
    "gru-chrono-ent0.01-ukl0.001-noskip": (
        {"ent_coef": 0.01, "uniform_kl_coef": 0.001, "obs_skip": False, "memory": _GRU_CHRONO},
        2.0,
    ),
    # a window of 101 frames: at the junction (step 100 of an on-time walk) the cue sits at
    # one fixed place of the stack, so no gradient has to cross 100 steps
    "framestack101": ({"memory": {"kind": "framestack", "window": 101}}, 2.0),
    "framestack101-ent0.01-ukl0.001": (
        {"ent_coef": 0.01, "uniform_kl_coef": 0.001, "memory": {"kind": "framestack", "window": 101}},
        2.0,
    ),
}


def suite_file(
    name: str,
    hyperparams: dict[str, Any],
    folder: Path,
    corridor: int = 100,
    steps: int = 3_000_000,
    gate_bias: float = 2.0,
    seeds: int = 15,
) -> Path:
    """The horizon suite's T-Maze lstm cell (by default corridor 100, a 3M cap) with ``hyperparams`` on top, seeds
    0 to ``seeds - 1`` (a run's seed does not depend on how many the suite has).
    Two keys of ``hyperparams`` set the memory instead: ``memory_hidden_size`` the lstm's
    width, ``memory`` a memory entry (one naming a kind replaces the lstm's, else its
    keys are laid over it)."""
    hyperparams = dict(hyperparams)
    hidden = hyperparams.pop("memory_hidden_size", 32)
    memory = {
        "kind": "lstm",
        "hidden_size": hidden,
        "init": "forget_bias",
        **({"gate_bias": gate_bias} if gate_bias != 2.0 else {}),
    }
    override = hyperparams.pop("memory", {})
    memory = dict(override) if "kind" in override else {**memory, **override}
    wrappers = hyperparams.pop("wrappers", None)
    suite = {
        "name": f"tmaze100-{name}",
        "seeds": seeds,
        "eval_episodes": 100,
        "stop": {"plateau_after": 0.9},
        "groups": [
            {
                "agent": "ppo",
                "memory": [memory],
                "hyperparams": {"obs_skip": True, **hyperparams},
                "envs": [
                    {
                        "id": "TMaze-v1",
                        "env_kwargs": {"corridor_length": corridor},
                        "bptt": [corridor + 1],
                        "steps": steps,
                        **({"wrappers": wrappers} if wrappers else {}),
                    }
                ],
            }
        ],
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument(
        "--variants", nargs="+", default=["base"], choices=list(VARIANTS), help="settings variants to run"
    )
    parser.add_argument(
        "--seeds", nargs="+", type=int, default=[5, 6, 7, 8, 9], help="held-out seeds, 5 or more"
    )
    parser.add_argument("--out", default="tmaze100_heldout.jsonl", help="JSON lines file to append to")
    parser.add_argument(
        "--steps",
        type=int,
        default=3_000_000,
        help="each run's cap in env steps (the learning rate decays linearly to 0 at it)",
    )
    args = parser.parse_args()
    if min(args.seeds) < FIRST_HELD_OUT_SEED:
        parser.error(f"held-out seeds are {FIRST_HELD_OUT_SEED} and up (the suite runs 0-4)")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.variants:
            hyperparams, bias = VARIANTS[name]
            suite = suite_file(
                name, hyperparams, Path(folder), steps=args.steps, gate_bias=bias, seeds=max(args.seeds) + 1
            )
            for spec in expand(load_suite(str(suite))):
                if spec.seed not in args.seeds:
                    continue
                start = time.perf_counter()
                result = execute(spec)
                row = {
                    "variant": name,
                    "cap": args.steps,
                    "seed": spec.seed,
                    "status": result.status,
                    "final_return": result.final_return,
                    "stop_reason": result.stop_reason,
                    "solved_steps": result.solved_steps,
                    "timesteps": result.timesteps,
                    "wall_seconds": round(time.perf_counter() - start, 1),
                }
                print(json.dumps(row), flush=True)
                with open(args.out, "a") as out:
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
