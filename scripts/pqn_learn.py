"""PQN on an env with a card until solved: one JSON line per check and one per run.

    python scripts/pqn_learn.py --corridor 100 --kind lstm --seeds 100 101 --budget 2000000
    python scripts/pqn_learn.py --env CueRecall-v0 --env-kwargs "{delay: 200}" --kind gru

Solved when two checks in a row (32 fresh greedy episodes each, every ``--check-every``
env steps) reach the bar: ``--bar`` of the way from the card's feedforward ceiling to its
optimum (0.75, the harness's stop rule: 0.875 on T-Maze). The run stops there; its final
score is 100 fresh episodes. Use held-out seeds (>= 100): the published suites use 0-19.
Settings are ``agents/pqn.yaml``'s for the env and its horizon, overridden by ``--set
name=value`` (YAML values). ``--corridor`` sets T-Maze's ``corridor_length``.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import yaml

from pomdp_bench.agents.pqn import PQN
from pomdp_bench.agents.pqn.settings import PQNSettings
from pomdp_bench.envs.cards import get_card


def run(
    env_id: str,
    env_kwargs: dict,
    kind: str,
    seed: int,
    budget: int,
    check_every: int,
    bar: float,
    memory: dict,
    changes: dict,
) -> dict:
    settings = PQNSettings.tuned(env_id, env_kwargs, seed=seed, **changes)
    agent = PQN(env_id, {"kind": kind, **memory}, env_kwargs=env_kwargs, settings=settings, device="cpu")
    state = {"next": check_every, "above": 0, "solved_at": None, "k": 0}
    t0 = time.perf_counter()

    def callback(model: PQN) -> bool:
        if model.num_timesteps < state["next"]:
            return True
        state["next"] += check_every
        score = float(model.evaluate(32, seed=10_000 + state["k"]).mean())
        state["k"] += 1
        h = model.history[-1]
        line = {
            "check": state["k"],
            "timesteps": model.num_timesteps,
            "score": score,
            "mean_return": round(h["mean_return"], 3),
            "epsilon": round(h["exploration_rate"], 4),
            "loss": round(h["loss"], 5),
            "q": round(h["q"], 3),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        print(json.dumps(line), flush=True)
        state["above"] = state["above"] + 1 if score >= bar else 0
        if state["above"] >= 2:
            state["solved_at"] = model.num_timesteps
            return False
        return True

    agent.learn(budget, callback=callback)
    wall = time.perf_counter() - t0
    final = float(agent.evaluate(100, seed=20_000).mean())
    return {
        "seed": seed,
        "env": env_id,
        "env_kwargs": env_kwargs,
        "bar": bar,
        "kind": kind,
        "memory": memory,
        "solved_at": state["solved_at"],
        "timesteps": agent.num_timesteps,
        "final_100": final,
        "wall_seconds": round(wall, 1),
        "steps_per_second": round(agent.num_timesteps / wall),
        "settings": {k: v for k, v in agent.settings.to_dict().items() if k != "memory"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--env", default="TMaze-v1", help="env id with a card (envs/*.yaml)")
    parser.add_argument("--env-kwargs", default="{}", help="env kwargs, YAML (e.g. '{delay: 200}')")
    parser.add_argument("--corridor", type=int, help="T-Maze corridor length (default 100 on T-Maze)")
    parser.add_argument(
        "--bar", type=float, default=0.75, help="share of the ceiling-optimum gap that solves"
    )
    parser.add_argument("--kind", default="lstm", help="memory kind")
    parser.add_argument("--hidden", type=int, default=64, help="the memory's hidden size")
    parser.add_argument("--memory", default="{}", help="more memory settings, YAML (init, gate_bias, ...)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[100], help="seeds to run (held out: >= 100)")
    parser.add_argument("--budget", type=int, default=2_000_000, help="env steps at most per run")
    parser.add_argument("--check-every", type=int, default=50_000, help="env steps between checks")
    parser.add_argument("--set", action="append", default=[], help="name=value (YAML) settings")
    args = parser.parse_args()
    torch.set_num_threads(1)
    memory = {"hidden_size": args.hidden, **yaml.safe_load(args.memory)}
    changes = {}
    for item in args.set:
        name, _, value = item.partition("=")
        changes[name] = yaml.safe_load(value)
    env_kwargs = yaml.safe_load(args.env_kwargs) or {}
    if not isinstance(env_kwargs, dict):
        parser.error(f"--env-kwargs must be a YAML mapping, got {args.env_kwargs!r}")
    if args.corridor is not None or args.env.startswith("TMaze"):
        env_kwargs.setdefault("corridor_length", 100 if args.corridor is None else args.corridor)
    card = get_card(args.env)
    ceiling, optimum = card.ceiling_for(env_kwargs), float(card.optimal_return)
    bar = ceiling + args.bar * (optimum - ceiling)
    for seed in args.seeds:
        if seed < 100:
            parser.error("use held-out seeds (>= 100); 0-19 are the published suite's")
        result = run(
            args.env, env_kwargs, args.kind, seed, args.budget, args.check_every, bar, memory, changes
        )
        print(json.dumps({"result": result}), flush=True)


if __name__ == "__main__":
    main()
