"""Small ones of issue 51: the sweep's progress bar draws its last line once, and the
env tour prints each card's numbers as the card has them."""

from __future__ import annotations

import io
import re

from pomdp_bench import demo
from pomdp_bench.envs.cards import get_card
from pomdp_bench.harness.progress import SweepProgress
from pomdp_bench.harness.spec import RunResult, RunSpec


def _sweep(tty: bool, statuses: list[str]) -> str:
    stream = io.StringIO()
    progress = SweepProgress(len(statuses), stream=stream, tty=tty)
    for i, status in enumerate(statuses):
        spec = RunSpec("TMaze-v1", {}, "ppo", {"kind": "none"}, None, i, 100)
        progress.started(spec)
        progress.advance(spec.key(), 100, 100)
        result = RunResult(
            status=status, final_return=0.5, steps_per_second=1.0, wall_seconds=1.0, error="boom"
        )
        progress.finished(spec, result)
    progress.close()
    return stream.getvalue()


def test_the_progress_bar_draws_each_count_once_and_its_last_line_once() -> None:
    text = _sweep(tty=True, statuses=["ok", "ok", "ok"])
    # Each redraw of the overall bar starts with a carriage return; count them per state.
    overall = re.findall(r"\rsweep: +\d+%\|[^\r\n]*?(\d)/3", text)
    assert overall == ["0", "1", "2", "3"], overall
    assert text.endswith("\n") and text.count("3/3") == 1
    failed = _sweep(tty=True, statuses=["ok", "failed"])
    assert failed.count("seed=1: FAILED: boom") == 1 and "failed=1" in failed
    plain = _sweep(tty=False, statuses=["ok", "ok"])
    assert plain.count("[2/2]") == 1 and plain.count("[1/2]") == 1 and "\r" not in plain


def test_the_demo_prints_cue_recalls_ceiling_as_its_card_gives_it(monkeypatch, capsys) -> None:
    card = get_card("CueRecall-v0")
    assert card.ceiling_for(card.kwargs) == 0.25
    monkeypatch.setattr(demo, "load_cards", lambda: {"CueRecall-v0": card})
    demo.main()
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("CueRecall-v0")]
    horizon, optimal, ceiling = row.split()[1:4]
    assert (horizon, optimal, ceiling) == ("11", "1", "0.25"), row


def test_learns_progress_bar_draws_its_last_line_once(capsys) -> None:
    from pomdp_bench import PPO

    model = PPO("CueRecall-v0", "none", env_kwargs={"delay": 2}, n_envs=4, n_steps=16, seed=0)
    model.learn(256, progress_bar=True)
    err = capsys.readouterr().err
    assert err.count("256/256") == 1, err[-300:]
    model.learn(128, progress_bar=True)  # a second call counts afresh (reset_num_timesteps)
    assert capsys.readouterr().err.count("128/128") == 1


def test_the_demo_leaves_out_superseded_envs_and_warns_of_none(monkeypatch, capsys) -> None:
    import warnings

    from pomdp_bench.envs.cards import implicit_card, load_cards

    # A card added at run time, with no vector twin (as other tests add): not the demo's.
    cards = {**load_cards(), "DemoOutsideBit-v0": implicit_card("DemoOutsideBit-v0")}
    monkeypatch.setattr(demo, "load_cards", lambda: cards)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a deprecation warning of a superseded id fails here
        demo.main()
    out = capsys.readouterr().out
    assert "TMaze-v1" in out and "TMaze-v0" not in out and "DemoOutsideBit" not in out
