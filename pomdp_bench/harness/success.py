"""Success rate: the share of fresh episodes a trained agent succeeds on.

Some envs are scored by whether an episode succeeds, not by its return: Key-to-Door's
return mixes apples with the door (Ni et al. report the door). Such an env's card gives
``success_kwargs``, kwargs under which an episode's return is 1 when it succeeds and 0
otherwise (Key-to-Door: ``apple_reward: 0``, ``final_reward: 1``). They change rewards
only, so the agent sees the episodes it was trained on; its final weights are evaluated
under them, nothing retrained.
"""

from __future__ import annotations

from typing import Any

from pomdp_bench.envs.cards import card_of
from pomdp_bench.harness.analysis_records import SuccessResult
from pomdp_bench.harness.generalisation import fresh_returns

SUCCESS_SEED = 2**40 + 3
"""Root of the evaluation episodes' reset seeds: far above any run's agent seed, and
apart from the generalisation analysis' (``2**40 + 1``)."""

DEFAULT_EPISODES = 100
"""Fresh episodes per run."""


def success_kwargs(env_id: str, card: dict[str, Any] | None = None) -> dict[str, Any]:
    """The card's ``success_kwargs`` of ``env_id`` (``card``: a run's carried card data).

    Raises:
        ValueError: the env has no success measure (the message says where to give one).
    """
    found = card_of(env_id, card).success_kwargs
    if not found:
        raise ValueError(
            f"env {env_id!r} has no success measure: its card gives no success_kwargs "
            "(kwargs under which a return is 1 on success, 0 otherwise)"
        )
    return dict(found)


def evaluate_success(
    agent: Any,
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    card: dict[str, Any] | None = None,
    n_episodes: int = DEFAULT_EPISODES,
    seed: int = SUCCESS_SEED,
) -> SuccessResult:
    """The success rate of ``agent`` on ``env_id`` with ``env_kwargs``.

    Deterministic episodes from a fresh memory (``Agent.evaluate``), on copies of the env
    with the run's kwargs, then the card's ``success_kwargs`` over them, and the agent's
    wrappers.

    Raises:
        ValueError: the env has no success measure, or an episode's return is neither 0
            nor 1 (the card's ``success_kwargs`` do not make it a success flag).
    """
    kwargs = {**(env_kwargs or {}), **success_kwargs(env_id, card)}
    returns = fresh_returns(agent, env_id, kwargs, n_episodes, seed)
    odd = returns[(returns != 0.0) & (returns != 1.0)]
    if len(odd):
        raise ValueError(
            f"env {env_id!r} under success_kwargs {kwargs} gave a return of {float(odd[0])!r}; "
            "a success flag must be 0 or 1"
        )
    return SuccessResult(rate=float(returns.mean()), n_episodes=int(n_episodes), seed=int(seed))


__all__ = ["DEFAULT_EPISODES", "SUCCESS_SEED", "SuccessResult", "evaluate_success", "success_kwargs"]
