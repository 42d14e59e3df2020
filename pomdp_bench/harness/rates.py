"""Training speeds for time estimates: ``agents/rates.yaml``, read as data.

``python -m pomdp_bench.run --dry-run`` prefers speeds measured in the store; these
defaults fill in for (agent, env, memory kind) triples the store has not run yet.
``scripts/measure_rates.py`` regenerates the file from a store of finished runs.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

from pomdp_bench.data import data_dir

#: env steps/s for an agent the file does not list
UNLISTED_RATE = 1000.0
RATES_FILE = "rates.yaml"


@functools.cache
def rate_table() -> dict[str, Any]:
    """The parsed ``agents/rates.yaml``: agent -> env id (or ``prefix*``) -> kind -> steps/s,
    with an optional ``default`` per agent."""
    path = data_dir("agents") / RATES_FILE
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def default_rate(agent: str, env_id: str, kind: str) -> float:
    """The default single-thread speed (env steps/s) of ``agent`` with memory ``kind`` on
    ``env_id``: the env's entry, else the first ``prefix*`` entry the id starts with, else
    the agent's ``default``, else :data:`UNLISTED_RATE`."""
    table = rate_table().get(agent) or {}
    default = float(table.get("default", UNLISTED_RATE))
    envs = table.get(env_id)
    if envs is None:
        envs = next(
            (
                rates
                for key, rates in table.items()
                if isinstance(key, str) and key.endswith("*") and env_id.startswith(key[:-1])
            ),
            {},
        )
    return float(envs.get(kind, default)) if isinstance(envs, dict) else default
