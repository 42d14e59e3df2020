"""What a shared file can make pomdp_bench import (issue 46).

A suite's ``import:`` entries, ``module:Id`` ids, wrapper paths, a card's entry points
and a save's env id and wrappers all name modules, and importing a module runs its code.
Each is checked as data (dotted identifiers only), a wrapper must be a wrapper class,
and ``python -m pomdp_bench.run`` lists the modules before it imports any.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.envs.make import import_env_module
from pomdp_bench.envs.wrappers import check_wrappers, wrapper_class
from pomdp_bench.harness import run
from pomdp_bench.harness.suites import load_suite, suite_imports
from pomdp_bench.validation import check_import_path, check_module_name

LISTING = "This suite imports code from: "


def _module(folder: Path, name: str, body: str) -> None:
    """A module ``name`` in ``folder`` (on sys.path) that says on stderr when it is imported."""
    (folder / f"{name}.py").write_text(
        f"import sys\nprint('IMPORTED {name}', file=sys.stderr, flush=True)\n" + textwrap.dedent(body)
    )


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path; modules written there are forgotten after the test."""
    folder = tmp_path / "mods"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith("i46_"):
            del sys.modules[name]


@pytest.mark.parametrize("path", ["popgym", "a.b_c", "_x.y2", "minigrid.wrappers:ImgObsWrapper", "m:_N"])
def test_an_import_path_of_dotted_identifiers_is_accepted(path: str) -> None:
    assert check_import_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "",
        "os; rm -rf /",
        "a b",
        "a..b",
        ".a",
        "a.",
        "a:b:c",
        ":X",
        "a:",
        "a:1b",
        "a:B.c",
        "__import__('os')",
        "a-b",
        "a/b",
        "a:b()",
    ],
)
def test_an_import_path_of_another_form_is_refused_naming_it(path: str) -> None:
    with pytest.raises(ValueError, match=r"must have the form 'module:Name' or 'module'") as err:
        check_import_path(path)
    assert repr(path) in str(err.value)


def test_an_import_path_that_is_not_a_string_is_a_type_error() -> None:
    for bad in (None, 5, ["os"], {"module": "os"}):
        with pytest.raises(TypeError, match="must be a string") as err:
            check_import_path(bad)
        assert isinstance(err.value, ValueError)
        with pytest.raises(TypeError, match="must be a module name"):
            check_module_name(bad)


def test_a_module_name_has_no_attribute() -> None:
    assert check_module_name("a.b") == "a.b"
    for bad in ("a:B", "a b", "a.", "os;x"):
        with pytest.raises(
            ValueError, match=r"identifiers separated by dots.*" + repr(bad).replace(".", r"\.")
        ):
            check_module_name(bad)
    with pytest.raises(ValueError, match="must have the form 'module:Name'"):
        check_import_path("a.b", attribute=True)


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ("{id: TMaze-v1, import: 'os; touch x', steps: 10}", r"import must be a module name.*'os; touch x'"),
        ("{id: TMaze-v1, import: [os], steps: 10}", r"import must be a module name"),
        ("{id: 'os.system(1):TMaze-v1', steps: 10}", r"the module before ':' must be a module name"),
        ("{id: TMaze-v1, wrappers: ['a b:C'], steps: 10}", r"wrapper path must have the form 'module:Name'"),
        ("{id: TMaze-v1, wrappers: ['gymnasium.wrappers'], steps: 10}", r"wrapper path must have the form"),
        (
            "{id: CartPole-v1, card: {entry_point: 'x y:Z'}, steps: 10}",
            r"card CartPole-v1: entry_point must have the form 'module:Name'",
        ),
    ],
)
def test_a_suite_naming_code_in_another_form_is_refused_when_read(
    tmp_path: Path, entry: str, match: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"name: bad\nseeds: 1\ngroups:\n  - agent: ppo\n    memory: [none]\n    envs:\n      - {entry}\n"
    )
    with pytest.raises(ValueError, match=match):
        load_suite(str(path))


def test_a_module_id_is_checked_before_its_import() -> None:
    with pytest.raises(ValueError, match=r"the module before ':' must be a module name.*'os\.path;x'"):
        import_env_module("os.path;x:CartPole-v1")


def test_a_wrapper_path_must_name_a_wrapper_class(modules: Path) -> None:
    _module(
        modules,
        "i46_not_wrappers",
        """
        import gymnasium as gym
        import os

        def function(env):
            return env

        class Plain:
            def __init__(self, env):
                self.env = env

        class Vector(gym.vector.VectorWrapper):
            pass

        class BadTwin(gym.Wrapper):
            vector_wrapper = function

        class Good(gym.Wrapper):
            pass

        instance = Good.__new__(Good)
        """,
    )
    for name, what in [
        ("function", "a function object"),
        ("Plain", "the class i46_not_wrappers.Plain"),
        ("Vector", "the class i46_not_wrappers.Vector"),
        ("instance", "a Good object"),
        ("os", "a module object"),
    ]:
        with pytest.raises(
            TypeError,
            match=rf"wrapper i46_not_wrappers:{name} is {what}; a wrapper path must name a gymnasium\.Wrapper subclass",
        ) as err:
            wrapper_class(f"i46_not_wrappers:{name}")
        assert isinstance(err.value, ValueError)
    with pytest.raises(
        TypeError,
        match=r"its vector_wrapper is a function object; it must be a gymnasium\.vector\.VectorWrapper subclass",
    ):
        wrapper_class("i46_not_wrappers:BadTwin")
    assert wrapper_class("i46_not_wrappers:Good").__name__ == "Good"
    assert wrapper_class("gymnasium.wrappers:TimeLimit") is gym.wrappers.TimeLimit


def test_a_function_wrapper_is_refused_when_the_env_is_made(modules: Path) -> None:
    _module(modules, "i46_function_wrapper", "def wrap(env):\n    return env\n")
    wrappers = check_wrappers(["i46_function_wrapper:wrap"])
    with pytest.raises(TypeError, match=r"must name a gymnasium\.Wrapper subclass"):
        PPO("CueRecall-v0", "none", n_envs=1, env_wrappers=wrappers)


def _write_suite(path: Path, envs: list[dict], cards: str | None = None) -> Path:
    suite = {"name": "imports", "seeds": 1, "groups": [{"agent": "ppo", "memory": ["none"], "envs": envs}]}
    if cards is not None:
        suite["cards"] = cards
    path.write_text(yaml.safe_dump(suite))
    return path


def test_run_lists_the_modules_a_suite_imports_before_importing_any(
    modules: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(
        modules,
        "i46_registers",
        """
        import gymnasium as gym
        gym.register("I46Listed-v0", entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv")
        """,
    )
    _module(modules, "i46_wraps", "import gymnasium as gym\nclass Same(gym.Wrapper):\n    pass\n")
    card_folder = tmp_path / "cards"
    card_folder.mkdir()
    (card_folder / "I46Card-v0.yaml").write_text(
        yaml.safe_dump({"id": "I46Card-v0", "entry_point": "i46_card_env:Env"})
    )
    suite = _write_suite(
        tmp_path / "imports.yaml",
        [
            {"id": "I46Listed-v0", "import": "i46_registers", "steps": 100, "wrappers": ["i46_wraps:Same"]},
            {"id": "pomdp_bench:TMaze-v1", "steps": 100, "wrappers": ["pomdp_bench.envs.wrappers:Seed32"]},
        ],
    )
    assert suite_imports(load_suite(str(suite))) == ["i46_registers", "i46_wraps"]
    assert suite_imports(load_suite(str(suite)), card_folder) == [
        "i46_card_env",
        "i46_registers",
        "i46_wraps",
    ]
    assert "i46_registers" not in sys.modules  # listing imports nothing

    assert run.main(["--suite", str(suite), "--dry-run"]) == 0
    err = capsys.readouterr().err
    listing = LISTING + "i46_registers, i46_wraps (an import runs that module's code, like pip install)"
    assert listing in err
    assert err.index(listing) < err.index("IMPORTED i46_registers")  # listed, then imported


def test_the_listing_comes_even_when_the_import_then_fails(
    modules: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(modules, "i46_fails", "raise ImportError('i46_fails is broken')\n")
    suite = _write_suite(tmp_path / "fails.yaml", [{"id": "X-v0", "import": "i46_fails", "steps": 10}])
    with pytest.raises(SystemExit):
        run.main(["--suite", str(suite), "--dry-run"])
    err = capsys.readouterr().err
    assert (
        err.index(LISTING + "i46_fails") < err.index("IMPORTED i46_fails") < err.index("i46_fails is broken")
    )


def test_a_suite_without_outside_code_lists_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert suite_imports(load_suite("memory")) == []
    assert suite_imports(load_suite("popgym")) == ["popgym"]  # its Seed32 wrapper is ours
    assert run.main(["--suite", "smoke", "--dry-run"]) == 0
    assert LISTING not in capsys.readouterr().err


def test_load_imports_the_modules_a_save_names(modules: Path, tmp_path: Path) -> None:
    _module(
        modules,
        "i46_save_wrapper",
        """
        import gymnasium as gym
        from pathlib import Path
        Path(__file__).with_name("i46_save_wrapper.ran").touch()  # its code runs on import
        class Same(gym.Wrapper):
            pass
        """,
    )
    model = PPO("CueRecall-v0", "none", n_envs=1, n_steps=8, env_wrappers=["i46_save_wrapper:Same"])
    path = model.save(tmp_path / "model")
    del sys.modules["i46_save_wrapper"]
    ran = modules / "i46_save_wrapper.ran"
    ran.unlink()

    before = set(sys.modules)
    loaded = PPO.load(path)
    assert set(sys.modules) - before == {"i46_save_wrapper"}  # what the save names, nothing else
    assert ran.exists()
    assert loaded.env_wrappers == [{"path": "i46_save_wrapper:Same", "kwargs": {}}]
    assert "load only files you trust" in " ".join(PPO.load.__doc__.split())
