"""The command lines (issue 51): no abbreviations, help on every option, rl-zoo3's
``--env``/``--agent``/``--env-kwargs`` on ``run`` as on ``tune``, and tune's objective."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest
import yaml

from pomdp_bench.harness import analysis, migrations, run, tuning
from pomdp_bench.harness.suites import expand, load_suite, parse_env_kwargs
from pomdp_bench.reporting import report

ROOT = Path(__file__).resolve().parent.parent
PARSERS = {
    "run": run.build_parser,
    "tune": tuning.build_parser,
    "report": report.build_parser,
    "migrations": migrations.build_parser,
    "analyse": analysis.build_parser,
}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_option_of_the_packages_parsers_has_help_and_no_abbreviation(name) -> None:
    parser = PARSERS[name]()
    assert parser.allow_abbrev is False
    for action in parser._actions:  # argparse keeps no public list of them
        if not isinstance(action, argparse._HelpAction):
            assert action.help and action.help.strip(), f"{name}: {action.option_strings or action.dest}"


def _calls(path: Path, name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == name
    ]


def test_every_parser_in_the_repository_refuses_abbreviations_and_helps_each_option() -> None:
    """The scripts' parsers are built inside their main(), so they are read from source."""
    files = [
        p
        for folder in ("pomdp_bench", "scripts", "examples", "studies", "benchmarks")
        for p in (ROOT / folder).rglob("*.py")
    ]
    missing = []
    for path in sorted(files):
        where = path.relative_to(ROOT)
        for call in _calls(path, "ArgumentParser"):
            if not any(
                k.arg == "allow_abbrev" and getattr(k.value, "value", None) is False for k in call.keywords
            ):
                missing.append(f"{where}:{call.lineno}: ArgumentParser without allow_abbrev=False")
        for call in _calls(path, "add_argument"):
            if not any(k.arg == "help" or k.arg is None for k in call.keywords):  # None: **kwargs
                missing.append(f"{where}:{call.lineno}: an option without help")
    assert not missing, "\n".join(missing)
    assert len(files) > 20  # the walk found the scripts


def test_run_refuses_an_abbreviated_option(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--suite", "smoke", "--seed", "3", "--dry-run"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --seed 3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tuning.build_parser().parse_args(["--env", "TMaze-v1", "--seed", "3"])


def test_run_takes_env_and_agent_as_tune_does_and_keeps_the_plural_forms() -> None:
    parser = run.build_parser()
    singular = parser.parse_args(["--env", "TMaze-v1", "CueRecall-v0", "--agent", "ppo"])
    plural = parser.parse_args(["--envs", "TMaze-v1", "CueRecall-v0", "--agents", "ppo"])
    assert singular.envs == plural.envs == ["TMaze-v1", "CueRecall-v0"]
    assert singular.agents == plural.agents == ["ppo"]
    tune_args = tuning.build_parser().parse_args(["--env", "TMaze-v1", "--agent", "ppo"])
    assert tune_args.env == "TMaze-v1" and tune_args.agent == "ppo"


def test_env_kwargs_are_pairs_of_yaml_values_or_one_mapping() -> None:
    assert parse_env_kwargs(None) == parse_env_kwargs([]) == {}
    assert parse_env_kwargs(["corridor_length=10", "name=hard", "sizes=[2, 3]"]) == {
        "corridor_length": 10,
        "name": "hard",
        "sizes": [2, 3],
    }
    assert parse_env_kwargs(["{corridor_length: 10}"]) == {"corridor_length": 10}
    assert parse_env_kwargs('{"corridor_length": 10, "x": 0.5}') == {"corridor_length": 10, "x": 0.5}
    with pytest.raises(ValueError, match="KEY=VALUE pairs or one YAML/JSON mapping, got 'corridor_length'"):
        parse_env_kwargs(["corridor_length"])
    with pytest.raises(ValueError, match="gives 'delay' twice"):
        parse_env_kwargs(["delay=1", "{delay: 2}"])
    with pytest.raises(ValueError, match="not a YAML or JSON mapping"):
        parse_env_kwargs(["{delay: [1}"])
    # tune reads them with the same helper
    assert tuning.build_parser().parse_args(["--env", "X", "--env-kwargs", "delay=1"]).env_kwargs == [
        "delay=1"
    ]


def _two_corridors(tmp_path: Path) -> Path:
    path = tmp_path / "two.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "two",
                "seeds": 1,
                "groups": [
                    {
                        "agent": "ppo",
                        "memory": ["none"],
                        "envs": [
                            {"id": "TMaze-v1", "env_kwargs": {"corridor_length": 5}, "steps": 1000},
                            {"id": "TMaze-v1", "env_kwargs": {"corridor_length": 10}, "steps": 1000},
                            {"id": "CueRecall-v0", "steps": 1000},
                        ],
                    }
                ],
            }
        )
    )
    return path


def test_run_env_kwargs_selects_the_entries_whose_kwargs_hold_them(tmp_path, capsys) -> None:
    path = _two_corridors(tmp_path)
    suite = load_suite(str(path))
    assert len(expand(suite)) == 3
    (spec,) = expand(suite, env_kwargs={"corridor_length": 10})
    assert spec.env_kwargs == {"corridor_length": 10}  # selected, not changed
    # An entry's kwargs are its card's defaults (CueRecall: num_cues 4, delay 10) and its own.
    assert [s.env_id for s in expand(suite, env_kwargs={"num_cues": 4})] == ["CueRecall-v0"]
    for given in (["corridor_length=10"], ['{"corridor_length": 10}']):
        assert run.main(["--suite", str(path), "--env", "TMaze-v1", "--env-kwargs", *given, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "corridor_length=10" in out and "corridor_length=5" not in out and "CueRecall" not in out, out
    with pytest.raises(SystemExit):
        run.main(["--suite", str(path), "--env-kwargs", "corridor_length=7", "--dry-run"])
    err = capsys.readouterr().err
    assert 'no env entry has the kwargs {"corridor_length": 7}' in err
    assert 'TMaze-v1 {"corridor_length": 5}' in err and "CueRecall-v0 {}" in err


def test_tune_minimises_seconds_by_default() -> None:
    assert tuning.build_parser().parse_args(["--env", "TMaze-v1"]).objective == "seconds"


def test_a_study_whose_runs_all_reach_their_cap_has_no_best(tmp_path, capsys) -> None:
    """A memoryless policy never solves cue recall (its ceiling is 1/4): every run ends
    at its cap, and the study says so and writes no entry."""
    pytest.importorskip("optuna")
    args = ["--env", "CueRecall-v0", "--env-kwargs", "delay=1", "--memory", "none", "--trials", "1"]
    code = tuning.main([*args, "--seeds", "1", "--steps", "64", "--out", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert "no run of its 1 completed trial(s) solved within its cap of 64 steps" in err
    assert "nothing is written" in err and not list(tmp_path.glob("*.yaml"))


def test_out_is_an_old_name_in_run_and_report_and_says_the_new_one(capsys) -> None:
    from pomdp_bench.harness import run
    from pomdp_bench.reporting import report

    args = run.build_parser().parse_args(["--suite", "smoke", "--out", "somewhere"])
    assert args.results == "somewhere"
    assert "--out is an old name; use --results" in capsys.readouterr().err
    args = report.build_parser().parse_args(["--out", "pages"])
    assert args.leaderboards == "pages"
    assert "--out is an old name; use --leaderboards" in capsys.readouterr().err


def test_tune_names_its_folder_results_as_run_does(capsys) -> None:
    from pomdp_bench.harness import tuning

    args = tuning.build_parser().parse_args(["--agent", "ppo", "--env", "CueRecall-v0", "--results", "t"])
    assert args.results == "t"
    args = tuning.build_parser().parse_args(["--agent", "ppo", "--env", "CueRecall-v0", "--out", "old"])
    assert args.results == "old"
    assert "--out is an old name; use --results" in capsys.readouterr().err
