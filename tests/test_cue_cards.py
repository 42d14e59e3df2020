"""The facts of a cue task live on its env card (``cue``): cue_tasks.py holds no table of envs."""

from __future__ import annotations

import pytest

from pomdp_bench.envs import cue_recall, tmaze
from pomdp_bench.envs.cards import card_data, get_card, implicit_card, load_cards, read_card
from pomdp_bench.harness.cue_tasks import cue_task

GOOD = card_data(get_card("TMaze-v1"))


def test_the_passive_cards_give_a_cue_and_the_others_none() -> None:
    with_cue = sorted(env_id for env_id, card in load_cards().items() if card.cue)
    assert with_cue == ["CueRecall-v0", "TMaze-v0", "TMaze-v1"]


@pytest.mark.parametrize(
    ("env_id", "largest"),
    [
        ("TMaze-v0", tmaze.MAX_CORRIDOR_LENGTH),
        ("TMaze-v1", tmaze.MAX_CORRIDOR_LENGTH),
        ("CueRecall-v0", cue_recall.MAX_DELAY),
    ],
)
def test_a_cards_horizon_max_is_the_largest_the_env_takes(env_id: str, largest: int) -> None:
    assert get_card(env_id).cue["horizon_max"] == largest


def test_the_cue_count_is_read_from_the_card() -> None:
    assert get_card("CueRecall-v0").cue_count_for({"num_cues": 7}) == 7
    assert cue_task("CueRecall-v0", {"num_cues": 3}).n_cues == 3
    assert cue_task("TMaze-v0").n_cues == 2
    with pytest.raises(ValueError, match="gives no cue"):
        get_card("MaskedCartPole-v0").cue_count_for()


@pytest.mark.parametrize(
    ("cue", "message"),
    [
        ("sign", r"cue must be a mapping .*got 'sign'"),
        ({**GOOD["cue"], "colour": 1}, r"unknown keys \['colour'\] and lacks \[\]; its keys"),
        ({k: v for k, v in GOOD["cue"].items() if k != "read"}, r"lacks \['read'\]"),
        (
            {**GOOD["cue"], "horizon_kwarg": "length"},
            r"horizon_kwarg 'length' is not among the card's kwargs",
        ),
        ({**GOOD["cue"], "horizon_max": 0}, r"horizon_max must be an int >= 1, got 0"),
        ({**GOOD["cue"], "horizon_max": True}, r"horizon_max must be an int >= 1, got True"),
        ({**GOOD["cue"], "index": -1}, r"index must be an int >= 0, got -1"),
        ({**GOOD["cue"], "read": "colour"}, r"read must be one of \['one_hot', 'sign'\], got 'colour'"),
        ({**GOOD["cue"], "count": 1}, r"count must be at least 2 cues, got 1"),
        ({**GOOD["cue"], "count": 3}, r"count must be 2 where read is 'sign', got 3"),
        ({**GOOD["cue"], "count": 2.5}, r"count must be an int >= 2 or a formula of the kwargs, got 2.5"),
        ({**GOOD["cue"], "count": "__import__('os')"}, r"cue.count"),
        (
            {**GOOD["cue"], "when": {"hidden": False}},
            r"when must map some of the card's kwargs .*got \{'hidden': False\}",
        ),
    ],
)
def test_a_bad_cue_is_refused_naming_the_value_and_what_is_valid(cue, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_card({**GOOD, "cue": cue})


def test_a_card_without_a_cue_carries_no_cue_field() -> None:
    """Added later: absent from carried card data while empty, so outside envs' run keys stay."""
    assert "cue" not in card_data(implicit_card("Outside-v0", {"optimal_return": 1.0}))
    assert "cue" not in card_data(get_card("MaskedCartPole-v0"))
    assert card_data(get_card("CueRecall-v0"))["cue"]["horizon_kwarg"] == "delay"


def test_an_outside_env_whose_carried_card_gives_a_cue_is_a_cue_task() -> None:
    data = {k: v for k, v in card_data(get_card("CueRecall-v0")).items() if k != "id"}
    task = cue_task("MyRecall-v0", {"delay": 3}, data)
    assert (task.horizon, task.episode_length, task.n_cues, task.max_value) == (4, 5, 4, 10_000)
    longer = task.scaled(2)
    assert (longer.env_kwargs, longer.horizon, longer.card) == ({"delay": 6}, 7, data)
    with pytest.raises(ValueError, match=r"'MyRecall-v0' .* is not a cue task"):
        cue_task("MyRecall-v0", {}, {k: v for k, v in data.items() if k != "cue"})
