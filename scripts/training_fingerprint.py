"""Fingerprints of short trainings, to show a refactor leaves training bit-identical.

For PPO (15 updates) and SAC (15 gradient steps), on a Discrete env (TMaze-v1) and
a Box env (MaskedPendulum-v0), with every memory kind: train from seed 0, then
hash every parameter, the training history's numbers, ``evaluate`` returns,
``predict`` actions and what a save/load round trip gives back. Run it at two
commits and compare the outputs line by line (``diff``); any change in the
numbers changes a hash.

    python scripts/training_fingerprint.py > after.txt
    git worktree add /tmp/before <commit>          # the code to compare with
    PYTHONPATH=/tmp/before python scripts/training_fingerprint.py > before.txt
    diff before.txt after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

import numpy as np
import torch

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.agents.sac import SAC
from pomdp_bench.memory import MEMORY_KINDS

ENVS = {"TMaze-v1": {"corridor_length": 4}, "MaskedPendulum-v0": {}}
UPDATES = 15


def _memory(kind: str) -> dict | None:
    return None if kind == "none" else {"kind": kind, "hidden_size": 16}


def _digest(*arrays: object) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]


def _history_numbers(history: list[dict[str, float]]) -> list[float]:
    keys = sorted({k for entry in history for k in entry if k != "steps_per_second"})
    return [float(entry.get(k, np.nan)) for entry in history for k in keys]


def fingerprint(agent_name: str, env_id: str, kind: str) -> str:
    if agent_name == "ppo":
        agent = PPO(env_id, _memory(kind), env_kwargs=ENVS[env_id], n_envs=4, n_steps=16, n_epochs=2, seed=0)
        agent.learn(UPDATES * 4 * 16)
        modules = [agent.policy]
    else:
        agent = SAC(
            env_id,
            _memory(kind),
            env_kwargs=ENVS[env_id],
            n_envs=2,
            burn_in=2,
            sequence_length=4,
            batch_size=8,
            learning_starts=20,
            net_arch=[32],
            seed=0,
        )
        agent.learn(20 + UPDATES * 2)  # one gradient step per vector step past learning_starts
        modules = [agent.actor, agent.critic, agent.critic_target]
    params = [p.detach().numpy().ravel() for m in modules for p in m.parameters()]
    returns = agent.evaluate(4)
    agent.observation_space.seed(0)  # the space's own RNG is unseeded
    obs = np.stack([agent.observation_space.sample() for _ in range(3)])
    action, _ = agent.predict(obs, deterministic=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent.pt"
        agent.save(path)
        loaded = type(agent).load(path, device="cpu")
        loaded_action, _ = loaded.predict(obs, deterministic=True)
    return (
        f"{agent_name:4s} {env_id:18s} {kind:12s} updates={agent.n_updates:3d} "
        f"params={_digest(np.concatenate(params))} history={_digest(_history_numbers(agent.history))} "
        f"evaluate={_digest(returns)} predict={_digest(action)} loaded={_digest(loaded_action)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--agents", nargs="+", default=["ppo", "sac"], help="agents to fingerprint")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for agent_name in args.agents:
        for env_id in ENVS:
            for kind in MEMORY_KINDS:
                print(fingerprint(agent_name, env_id, kind), flush=True)


if __name__ == "__main__":
    main()
