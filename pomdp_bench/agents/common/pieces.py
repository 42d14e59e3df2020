"""Pieces: how a rollout of ``n_envs`` copies x ``n_steps`` steps is cut into equal
windows of ``bptt_length`` steps that split exactly into minibatches. PPO and PQN both
train on whole pieces, starting each from the memory the policy had while acting."""

from __future__ import annotations

from math import gcd


def default_bptt_length(n_envs: int, n_steps: int, num_minibatches: int) -> int:
    """The longest piece length that cuts every rollout into equal parts and
    splits exactly into ``num_minibatches`` minibatches of whole pieces.

    Whole rollouts (``n_steps``) when ``n_envs`` is a multiple of
    ``num_minibatches``; otherwise each rollout is cut into
    ``num_minibatches // gcd(n_envs, num_minibatches)`` pieces.

    Raises:
        ValueError: when that many pieces do not divide ``n_steps``.
    """
    pieces_per_rollout = num_minibatches // gcd(n_envs, num_minibatches)
    if n_steps % pieces_per_rollout:
        valid = [m for m in _divisors(n_envs * n_steps) if n_steps % (m // gcd(n_envs, m)) == 0]
        raise ValueError(
            f"no bptt_length splits n_envs={n_envs} rollouts of n_steps={n_steps} into "
            f"num_minibatches={num_minibatches} minibatches of whole pieces: each rollout would need "
            f"{pieces_per_rollout} equal pieces, which do not divide {n_steps}. "
            f"Valid num_minibatches here: {valid}"
        )
    return n_steps // pieces_per_rollout


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def check_bptt_length(bptt_length: int | None, n_envs: int, n_steps: int, num_minibatches: int) -> int:
    """``bptt_length``, or the default when ``None``; refuse a length that does not
    divide the default, listing the valid ones."""
    default = default_bptt_length(n_envs, n_steps, num_minibatches)
    if bptt_length is None:
        return default
    if isinstance(bptt_length, bool) or not isinstance(bptt_length, int) or default % bptt_length:
        raise ValueError(
            f"bptt_length={bptt_length!r} is not valid for n_envs={n_envs}, n_steps={n_steps}, "
            f"num_minibatches={num_minibatches}: it must divide the default {default} "
            f"(the longest pieces that split into the minibatches). Valid values: {_divisors(default)}"
            " (or None). For longer pieces ask for fewer minibatches."
        )
    return bptt_length
