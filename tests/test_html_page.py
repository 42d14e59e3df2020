"""The leaderboard page (``index.html``): built by ``report``, self-contained, byte-identical
from the same store, and working in a real browser.

The page is built from a small store of synthetic runs (no training). The browser test
drives Debian's headless Chromium through Selenium with the driver's path given, so
nothing is downloaded: it sorts, filters, opens a cell's details and checks the curves
drawn there, presses Enter on a header, fails on any console error, and saves screenshots
at desktop and phone width. Without Chromium, its driver or selenium it is skipped, saying
what to install; ``.ci/run`` installs them and sets ``POMDP_BENCH_BROWSER_TESTS=required``,
which turns that skip into a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import webbrowser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.reporting import html_page, report

SUITE = "mine"
# (env_id, env_kwargs, horizon, memory, bptt_length) -> final return of each of 5 seeds
CELLS: dict[tuple[str, str, int, str, int | None], list[float]] = {
    ("TMaze-v1", '{"corridor_length":5}', 6, "none", None): [0.5, 0.45, 0.55, 0.5, 0.5],
    ("TMaze-v1", '{"corridor_length":5}', 6, "gru", 8): [1.0, 1.0, 0.95, 1.0, 0.9],
    ("TMaze-v1", '{"corridor_length":5}', 6, "lstm", 8): [0.6, 0.7, 0.8, 0.65, 0.75],
    ("TMaze-v1", '{"corridor_length":10}', 11, "none", None): [0.5, 0.5, 0.4, 0.55, 0.5],
    ("TMaze-v1", '{"corridor_length":10}', 11, "gru", 16): [0.85, 0.8, 0.9, 0.95, 0.7],
    ("CueRecall-v0", '{"delay":2}', 3, "none", None): [0.25, 0.3, 0.2, 0.25, 0.2],
    ("CueRecall-v0", '{"delay":2}', 3, "gru", 8): [0.55, 0.4, 0.5, 0.45, 0.6],
}
LONG_CURVE = 150  # points in CueRecall's curves: more than the page keeps


def _episodes(mean: float, count: int = 20) -> list[float]:
    """``count`` 0/1 episode returns whose mean is ``mean`` (to the nearest episode)."""
    wins = round(mean * count)
    return [1.0] * wins + [0.0] * (count - wins)


def _write_store(path: Path) -> Path:
    with ResultStore(path) as store:
        sweep = store.start_sweep(
            SUITE, f"python -m pomdp_bench.run --suite {SUITE}", "abc1234", "test machine"
        )
        specs = []
        for (env_id, kwargs, horizon, kind, bptt), returns in CELLS.items():
            for seed, final in enumerate(returns):
                spec = RunSpec(
                    env_id, json.loads(kwargs), "ppo", {"kind": kind}, bptt, seed, 20_000, horizon=horizon
                )
                points = LONG_CURVE if env_id == "CueRecall-v0" else 6 - (seed == 4)  # seed 4 stops early
                curve = [(1000 * (i + 1), final * (i + 1) / points) for i in range(points)]
                solved = final >= 0.9
                result = RunResult(
                    status="ok",
                    final_return=sum(_episodes(final)) / 20,
                    final_returns=_episodes(final),
                    curve=curve,
                    steps_per_second=1000.0 + 10 * seed,
                    wall_seconds=20.0,
                    stop_reason="solved" if solved else "cap",
                    solved_steps=4000 + 1000 * seed if solved else None,
                    solved_seconds=4.0 if solved else None,
                    timesteps=curve[-1][0],
                    # As PPO measures it (without, the report rebuilds it from the rollout layout).
                    gradient_reach=[0] * horizon + [10 + seed],
                )
                store.write(spec, result, git_commit="abc1234", machine="test machine")
                specs.append(spec)
        store.link(SUITE, specs)
        store.finish_sweep(sweep, 700.0, len(specs))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(store folder, leaderboards folder)`` with the page written by ``report``."""
    root = tmp_path_factory.mktemp("page")
    store = _write_store(root / "results")
    out = root / "leaderboards"
    report.write_reports(store, out)
    return store, out


def _embedded(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="cell-data">(.*?)</script>', page, re.S)
    assert match, "no embedded cell data"
    return json.loads(match.group(1))


def test_the_page_is_self_contained_and_regenerates_byte_identically(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, out = built
    first = (out / html_page.PAGE_NAME).read_bytes()
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", opened.append)
    report.main(["--results", str(store), "--leaderboards", str(tmp_path), "--open"])
    assert (tmp_path / html_page.PAGE_NAME).read_bytes() == first, "the same store gave another page"
    assert opened == [(tmp_path / html_page.PAGE_NAME).resolve().as_uri()]

    page = first.decode("utf-8")
    assert not re.search(r"https?://", page), "the page names a network address"
    assert "<link" not in page and "<script src" not in page and "@import" not in page
    for name in re.findall(r'(?:src|href)="([^"#][^"]*)"', page):  # every file it refers to is beside it
        assert (out / name).is_file(), name
    assert f"{SUITE}_horizon.svg" in page and f"{SUITE}_heatmap_TMaze-v1_corridor_length5_ppo.svg" in page
    assert "abc1234" in page and "test machine" in page and "11.7 min" in page  # the provenance

    data = _embedded(page)["cells"]
    cells = pd.read_csv(out / f"{SUITE}.csv")
    assert len(data) == len(cells) == len(CELLS)
    for cell in data.values():
        assert len(cell["seeds"]) == 5
        assert all(0 < len(s["curve"]) <= html_page.MAX_CURVE_POINTS for s in cell["seeds"])
        assert len(cell["band"]["t"]) <= html_page.MAX_CURVE_POINTS
    long = next(c for c in data.values() if c["title"].startswith("CueRecall-v0"))
    assert long["seeds"][0]["curve"][0][0] == 1000 and long["seeds"][0]["curve"][-1][0] == 1000 * LONG_CURVE


def test_the_page_opens_on_the_answer_with_provenance_below_each_table(built: tuple[Path, Path]) -> None:
    """The longest-horizon table comes first: TMaze gru learned corridor 5 (horizon 6)
    and not corridor 10 (4 of 5 seeds above the line), so its limit reads 6, not 11 within
    the cap (runs without a stop rule: the budget ended them). Each table's
    provenance follows it, and cells read in horizon order (10 before 100)."""
    _, out = built
    page = (out / html_page.PAGE_NAME).read_text(encoding="utf-8")
    answer, suite = page.index('id="answer"'), page.index(f'id="suite-{SUITE}"')
    assert answer < suite and page.index('href="#answer"') < answer
    table = page[page.index('id="table-answer"') : page.index("</table>", answer)]
    # the next horizon ran (no stop rule: its cap ended it) and was not learned: a bracket
    assert re.search(r'<td data-key="h-TMaze-v1" data-v="6" class="num">6, not 11 \(cap[^<]*\)</td>', table)
    assert f"{SUITE}/{SUITE}_horizon.svg" in page[answer:suite]
    assert page.index("How it was made", answer) < suite  # the answer's provenance, below its table
    assert page.index(f'id="table-{SUITE}"') < page.index("How it was made", suite)
    tmaze = [m.start() for m in re.finditer(r'data-v="TMaze-v1\|', page[suite:])]
    assert tmaze == sorted(tmaze)


def test_the_answer_suite_comes_first_then_the_main_suite_then_the_rest() -> None:
    empty = pd.DataFrame()
    spanning = pd.DataFrame({"horizons_tried": ["5;10"]})

    def page(name: str, horizon: pd.DataFrame = empty) -> html_page.SuitePage:
        return html_page.SuitePage(name, empty, empty, empty, [], horizon=horizon)

    suites = [
        page("popgym"),
        page("memory"),
        page("horizon-long", spanning),
        page("horizon", spanning),
        page("a"),
    ]
    assert [p.name for p in html_page.page_order(suites)] == [
        "horizon",
        "memory",
        "a",
        "horizon-long",
        "popgym",
    ]
    assert [p.name for p in html_page.page_order(suites[:3])] == ["horizon-long", "memory", "popgym"]
    assert [p.name for p in html_page.page_order(suites[:2])] == ["memory", "popgym"]


# --- in a browser ---------------------------------------------------------------------------------

CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver", "chromedriver")
INSTALL = (
    "apt-get install chromium chromium-driver (Debian/Ubuntu) and pip install -e '.[browser]' "
    "(selenium); .ci/run does both"
)


def _find(candidates: tuple[str, ...]) -> str | None:
    for name in candidates:
        found = shutil.which(name) if "/" not in name else (name if os.access(name, os.X_OK) else None)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser_paths() -> tuple[str, str]:
    """``(chromium, chromedriver)``, or a skip naming what to install (checked before the
    page is built, so a machine without a browser skips at once)."""
    missing = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium")
    chromium, driver_path = _find(CHROMIUM), _find(CHROMEDRIVER)
    missing += [
        name for name, path in (("chromium", chromium), ("chromedriver", driver_path)) if path is None
    ]
    if missing:
        message = f"browser test needs {', '.join(missing)}: {INSTALL}"
        if os.environ.get("POMDP_BENCH_BROWSER_TESTS") == "required":
            pytest.fail(message)
        pytest.skip(message)
    assert chromium is not None and driver_path is not None
    return chromium, driver_path


@pytest.fixture()
def browser(browser_paths: tuple[str, str], tmp_path: Path) -> Any:
    """Headless Chromium under Selenium, driver path given (Selenium Manager never runs)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = browser_paths
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _column(driver: Any, table: Any, key: str) -> list[float | None]:
    """The sort values of column ``key`` in the visible rows, in their order on the page."""
    values = driver.execute_script(
        "return Array.from(arguments[0].tBodies[0].rows).filter(r => !r.hidden)"
        ".map(r => r.querySelector('td[data-key=\"' + arguments[1] + '\"]').getAttribute('data-v'));",
        table,
        key,
    )
    return [float(v) if v else None for v in values]


def test_the_page_sorts_filters_and_draws_a_cells_curves_in_chromium(
    browser_paths: tuple[str, str], built: tuple[Path, Path], browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    _, out = built
    cells = pd.read_csv(out / f"{SUITE}.csv")
    browser.get((out / html_page.PAGE_NAME).as_uri())

    # The page opens on the answer; its horizons sort as numbers.
    assert browser.find_element(By.CSS_SELECTOR, "main > section").get_attribute("id") == "answer"
    answer = browser.find_element(By.ID, "table-answer")
    assert (
        answer.is_displayed()
        and answer.location["y"] < browser.find_element(By.ID, f"table-{SUITE}").location["y"]
    )
    answer.find_element(By.CSS_SELECTOR, 'th[data-key="h-TMaze-v1"]').click()
    limits = _column(browser, answer, "h-TMaze-v1")
    assert limits == sorted(v for v in limits if v is not None) + [None] * limits.count(None)

    table = browser.find_element(By.ID, f"table-{SUITE}")
    assert len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == len(cells)

    # Sort by normalised score: ascending, then descending on a second click.
    header = table.find_element(By.CSS_SELECTOR, 'th[data-key="normalized_score"]')
    header.click()
    expected = sorted(float(f"{v:.6g}") for v in cells["normalized_score"])
    assert _column(browser, table, "normalized_score") == expected
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert _column(browser, table, "normalized_score") == expected[::-1]
    assert header.get_attribute("aria-sort") == "descending"

    # The keyboard: Enter on a focused header sorts by it.
    mean = table.find_element(By.CSS_SELECTOR, 'th[data-key="return_mean"]')
    browser.execute_script("arguments[0].focus();", mean)
    assert browser.switch_to.active_element == mean
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    assert mean.get_attribute("aria-sort") == "ascending"
    assert header.get_attribute("aria-sort") == "none"
    assert _column(browser, table, "return_mean") == sorted(float(f"{v:.6g}") for v in cells["return_mean"])

    # Filter to one env variant, then one env id, then back to all.
    section = browser.find_element(By.ID, f"suite-{SUITE}")
    env = Select(section.find_element(By.CSS_SELECTOR, 'select[data-filter="env"]'))
    count = section.find_element(By.CSS_SELECTOR, ".count")
    env.select_by_value("variant:TMaze-v1 corridor_length=5")
    visible = [r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()]
    assert len(visible) == 3 and count.text == f"3 of {len(cells)} cells shown"
    assert {r.get_attribute("data-memory") for r in visible} == {"none", "gru", "lstm"}
    env.select_by_value("env:CueRecall-v0")
    Select(section.find_element(By.CSS_SELECTOR, 'select[data-filter="memory"]')).select_by_value("gru")
    visible = [r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()]
    assert len(visible) == 1 and count.text == f"1 of {len(cells)} cells shown"

    # Its details: a curve per seed with its points, the band, and the per-seed returns.
    visible[0].find_element(By.CSS_SELECTOR, "button.detail").click()
    dialog = browser.find_element(By.ID, "detail")
    assert dialog.get_attribute("open") is not None
    assert browser.find_element(By.ID, "detail-title").text.startswith("CueRecall-v0 delay=2 · ppo · gru")
    seeds = dialog.find_elements(By.CSS_SELECTOR, "svg.curve path.seed")
    assert len(seeds) == 5
    for path in seeds:
        points = re.findall(r"[ML]\s*-?[\d.]+,-?[\d.]+", path.get_attribute("d"))
        assert 2 <= len(points) <= html_page.MAX_CURVE_POINTS
    assert dialog.find_elements(By.CSS_SELECTOR, "svg.curve path.band")
    assert dialog.find_elements(By.CSS_SELECTOR, "svg.curve path.meanline")
    rows = dialog.find_elements(By.CSS_SELECTOR, "table.seeds tbody tr")
    cue_gru = cells[(cells["env_id"] == "CueRecall-v0") & (cells["memory"] == "gru")].iloc[0]
    assert len(rows) == cue_gru["n_seeds"]
    browser.save_screenshot(str(tmp_path / "leaderboard-detail.png"))
    dialog.find_element(By.CSS_SELECTOR, "button.close").click()
    assert dialog.get_attribute("open") is None
    section.find_element(By.CSS_SELECTOR, "button.reset").click()
    assert count.text == f"{len(cells)} of {len(cells)} cells shown"
    browser.save_screenshot(str(tmp_path / "leaderboard.png"))

    # A link to a cell opens its details.
    browser.get((out / html_page.PAGE_NAME).as_uri() + f"#{SUITE}-0")
    assert browser.find_element(By.ID, "detail").get_attribute("open") is not None

    # At a phone's width the page does not scroll sideways: the table scrolls in its wrapper.
    browser.set_window_size(400, 900)
    browser.get((out / html_page.PAGE_NAME).as_uri())
    width, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert inner <= 420 and width <= inner, f"the page is {width}px wide in a {inner}px window"
    wrap = browser.find_element(By.CSS_SELECTOR, f"#suite-{SUITE} .table-wrap")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth;", wrap)
    browser.execute_script("arguments[0].scrollIntoView();", wrap)
    browser.save_screenshot(str(tmp_path / "leaderboard-400px.png"))
    assert (tmp_path / "leaderboard.png").stat().st_size > 10_000
    assert (tmp_path / "leaderboard-400px.png").stat().st_size > 5_000

    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors
