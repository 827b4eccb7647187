"""The site in a real browser: Debian's chromium, headless, driven by Selenium through chromium-driver.

Skipped where no chromium is installed, except in CI (CI=true), where .ci/run installs it first and a
missing browser is a failure. OPDRIFT_SCREENSHOTS=DIR saves the docs' screenshots (docs/*.png) there.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sitebuild import BACKEND_LIST, SNAPSHOTS, hostile_source

from opdrift.coverage.backends import read_text_list
from opdrift.coverage.check import compute_coverage
from opdrift.snapshot import load_snapshot

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs chromium and chromium-driver (.ci/run installs them)")
    pytest.skip("no chromium / chromedriver here", allow_module_level=True)

from selenium import webdriver  # noqa: E402 - only once the browser is known to be there
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.chrome.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,800",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from opdrift.cli import main

    root = tmp_path_factory.mktemp("browser-site")
    listed = root / "list.txt"
    listed.write_text(BACKEND_LIST)
    out = root / "out"
    argv = ["site", "-o", str(out), "--backend", f"mine:text={listed}", "--backend", "mps:dispatch=MPS"]
    assert main([*argv, *map(str, SNAPSHOTS)]) == 0
    return out


def _open(driver: WebDriver, path: Path) -> list[dict[str, object]]:
    driver.get(path.as_uri())
    logs: list[dict[str, object]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return logs


def _shot(driver: WebDriver, name: str) -> None:
    target = os.environ.get("OPDRIFT_SCREENSHOTS")
    if target:
        driver.save_screenshot(str(Path(target) / name))


def _shown(driver: WebDriver) -> int:
    return sum(
        1
        for _ in driver.execute_script(
            "return [...document.querySelectorAll('#ops tbody tr')].filter(r => !r.hidden)"
        )
    )


def test_the_index_loads_clean_and_filters_narrow_the_table(browser: WebDriver, site: Path) -> None:
    start = time.perf_counter()
    logs = _open(browser, site / "index.html")
    loaded = time.perf_counter() - start
    assert [e for e in logs if e.get("level") in ("SEVERE", "WARNING")] == []
    everything = _shown(browser)
    assert everything == len(set(load_snapshot(SNAPSHOTS[-1]).decisions)) > 1500
    assert browser.find_element(By.ID, "shown").text == str(everything)
    _shot(browser, "site-index.png")
    box = browser.find_element(By.ID, "q")
    start = time.perf_counter()
    box.send_keys("conv")
    typed = time.perf_counter() - start
    narrowed = _shown(browser)
    assert 0 < narrowed < everything
    names = browser.execute_script(
        "return [...document.querySelectorAll('#ops tbody tr')].filter(r => !r.hidden).map(r => r.cells[0].textContent)"
    )
    assert all("conv" in n for n in names) and "convolution" in names
    Select(browser.find_element(By.ID, "tag")).select_by_value("core")
    core = _shown(browser)
    assert 0 < core < narrowed
    Select(browser.find_element(By.ID, "backend")).select_by_value("mine")
    Select(browser.find_element(By.ID, "state")).select_by_value("covered")
    assert "convolution" in browser.execute_script(
        "return [...document.querySelectorAll('#ops tbody tr')].filter(r => !r.hidden).map(r => r.cells[0].textContent)"
    )
    # ~1,600 rows: no visible pause on load or while typing (generous bounds for a busy CI machine)
    assert loaded < 10 and typed < 5
    assert [
        e
        for e in browser.get_log("browser")  # type: ignore[no-untyped-call]
        if e.get("level") == "SEVERE"
    ] == []


def test_an_operator_page_shows_its_schema_and_history(browser: WebDriver, site: Path) -> None:
    logs = _open(browser, site / "ops" / "_cdist_backward.html")
    assert [e for e in logs if e.get("level") == "SEVERE"] == []
    schemas = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "pre.schema")]
    assert (
        "_cdist_backward(Tensor grad_output, Tensor x1, Tensor x2, float p, Tensor cdist) -> Tensor"
        in schemas
    )
    history = browser.find_element(By.CSS_SELECTOR, "table.life").text
    assert "2.14.1" in history and "breaking" in history and "renamed to" in history
    assert "Present in the first release shown, 2.12.0" in browser.find_element(By.TAG_NAME, "main").text
    _shot(browser, "site-operator.png")


def test_the_matrix_shows_the_backend_fixtures_counts(browser: WebDriver, site: Path) -> None:
    _open(browser, site / "coverage.html")
    cov = compute_coverage(load_snapshot(SNAPSHOTS[-1]), read_text_list(BACKEND_LIST, "list.txt"))
    for bucket in ("convolution", "primitive_pointwise", "private"):
        ops = [op for op in cov.ops if op.bucket == bucket]
        cell = browser.find_element(
            By.CSS_SELECTOR, f'#gaps tr[data-bucket="{bucket}"] td[data-backend="mine"]'
        )
        assert cell.text == f"{sum(1 for op in ops if not op.covered)} of {len(ops)}"
    first = browser.find_element(By.CSS_SELECTOR, "#matrix tbody tr")
    assert "core" in (first.get_attribute("class") or "")
    _shot(browser, "site-coverage.png")


def test_a_hostile_source_runs_no_script(browser: WebDriver, tmp_path: Path) -> None:
    from opdrift.cli import main

    out = tmp_path / "out"
    assert main(["site", "-o", str(out), str(hostile_source(tmp_path / "src"))]) == 0
    for page in sorted(out.rglob("*.html")):
        _open(browser, page)
        assert browser.execute_script("return window.pwned === undefined"), page
        assert browser.find_elements(By.CSS_SELECTOR, "main img, main iframe, main b[onmouseover]") == []
    _open(browser, out / "ops" / "abs.html")
    assert '<img src=x onerror="window.pwned=2">' in browser.find_element(By.TAG_NAME, "main").text
    index = json.loads((out / "data" / "ops.json").read_text())
    assert any('<img src=x onerror="window.pwned=2">' in op["t"] for op in index["ops"])


def _column(driver: WebDriver, key: str) -> list[object]:
    """The visible rows' values of the index row's KEY, in the order the table shows them."""
    return list(
        driver.execute_script(
            "const ops = JSON.parse(document.getElementById('ops-data').textContent).ops;"
            "return [...document.querySelectorAll('#ops tbody tr')].filter(r => !r.hidden)"
            f".map(r => ops[Number(r.dataset.i)]['{key}'])"
        )
    )


def _models(driver: WebDriver) -> list[int | None]:
    return [m if isinstance(m, int) else None for m in _column(driver, "m")]


def _names(driver: WebDriver) -> list[str]:
    return [str(n) for n in _column(driver, "n")]


def test_the_models_column_sorts_and_the_order_is_linked(browser: WebDriver, site: Path) -> None:
    _open(browser, site / "index.html")
    header = browser.find_element(By.CSS_SELECTOR, 'th[data-sort="m"]')
    header.find_element(By.TAG_NAME, "button").click()
    most = _models(browser)
    known = [m for m in most if m is not None]
    # most models first; an operator newer than the model table ("new", null) last
    assert known == sorted(known, reverse=True) and known[0] == 51
    assert most[: len(known)] == known and set(most[len(known) :]) <= {None}
    assert header.get_attribute("aria-sort") == "descending"
    rows = browser.find_elements(By.CSS_SELECTOR, "#ops tbody tr:not([hidden])")
    assert rows[0].find_elements(By.TAG_NAME, "td")[3].text == "51"
    assert browser.current_url.endswith("#sort=-m")
    header.find_element(By.TAG_NAME, "button").click()
    fewest = [m for m in _models(browser) if m is not None]
    assert fewest == sorted(known) and header.get_attribute("aria-sort") == "ascending"
    # the filters still apply to the sorted rows
    browser.find_element(By.ID, "q").send_keys("conv")
    assert all("conv" in n for n in _names(browser))
    assert [m for m in _models(browser) if m is not None] == sorted(
        m for m in _models(browser) if m is not None
    )
    # a link keeps the order and the filters
    browser.get((site / "index.html").as_uri() + "#sort=-m&q=conv")
    browser.refresh()
    linked = [m for m in _models(browser) if m is not None]
    assert linked == sorted(linked, reverse=True) and all("conv" in n for n in _names(browser))
    # the name header puts the page's own order back
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="n"] button').click()
    names = _names(browser)
    assert names == sorted(names)
    assert [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"] == []  # type: ignore[no-untyped-call]
