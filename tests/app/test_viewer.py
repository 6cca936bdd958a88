"""The evidence viewer of ``spire serve`` (``/``) in a real browser: headless Chromium (Debian's
``chromium``) driven by Selenium through Debian's ``chromedriver`` (no driver download: Selenium
Manager stays offline). A question typed and sent, the answer in the first result's first
evidence citation, that citation clicked: its sentence highlighted in its source page.

Skipped where the browser or its driver is missing, unless ``CI`` is set (``.ci/run`` installs
both): there a missing browser fails. ``SPIRE_SCREENSHOTS=DIR`` keeps the two screenshots (the
page after a query, the highlighted source) in ``DIR`` (docs/llamaindex.md shows those of
``SPIRE_SCREENSHOTS=docs/img``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding

from spire_app.cli import main
from spire_app.serve import QueryService, SpireServer
from spire_app.store import load_store
from tests.llamaindex.conftest import QUESTION, FixedLLM

from .conftest import serving

PHRASE = "30 seconds and one day"
MUTED = "rgba(110, 110, 115, 1)"  # viewer.css's --muted
INSTALL = "apt-get install chromium chromium-driver"
#: what a page's <title> and a question may hold: shown as text, never run or parsed as markup
HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
HOSTILE_PAGE = f"""<!DOCTYPE html>
<html><head><title>{HOSTILE.replace("<", "&lt;")} Quokka care</title>
<script>window.pwned = 3</script></head>
<body><h1>Quokka care</h1>
<h2>Food</h2>
<p>The quokka eats the leaves of the saltbush and grasses. It drinks little water.</p>
<h2>Sleep</h2>
<p>Quokkas sleep in the shade by day <a href="javascript:window.pwned=4">and feed at night</a>.</p>
</body></html>
"""


def _browser_paths() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    missing = " and ".join(name for name, path in (("chromium", chromium), ("chromedriver", driver)) if not path)
    if os.environ.get("CI"):
        pytest.fail(f"{missing} not found under CI: .ci/run installs them ({INSTALL})")
    pytest.skip(f"{missing} not found: {INSTALL}")


@pytest.fixture(scope="module")
def server(example_store: Path, embed_model: BaseEmbedding) -> Iterator[SpireServer]:
    yield from serving(QueryService(load_store(example_store, embed_model=embed_model)))


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory: pytest.TempPathFactory, embed_model: BaseEmbedding) -> Iterator[SpireServer]:
    pages = tmp_path_factory.mktemp("hostile-pages")
    (pages / "quokka.html").write_text(HOSTILE_PAGE, encoding="utf-8")
    store = tmp_path_factory.mktemp("hostile-store") / "store"
    assert main(["index", str(pages), "--store", str(store), "--quiet"]) == 0
    yield from serving(QueryService(load_store(store, embed_model=embed_model)))


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    chromium, chromedriver = _browser_paths()
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager downloads nothing
    if os.environ.get("CI"):
        from selenium import webdriver
    else:
        webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium (the dev extra)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1200,900",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _ask(driver: Any, url: str, question: str, **fields: str) -> float:
    """Open the viewer at ``url``, type ``question`` (and ``fields``: budget, max_citations), send
    it; the milliseconds the page took to answer."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url + "/")
    for name, value in {"q": question, **fields}.items():
        box = driver.find_element(By.ID, name)
        box.clear()
        box.send_keys(value)
    driver.find_element(By.ID, "submit").click()
    status = driver.find_element(By.ID, "status")
    done = lambda _: status.get_attribute("data-ms") or "error" in (status.get_attribute("class") or "")  # noqa: E731
    WebDriverWait(driver, 120).until(done)
    assert "error" not in (status.get_attribute("class") or ""), status.text
    return float(status.get_attribute("data-ms"))


def _screenshot(driver: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    assert driver.save_screenshot(str(path)) and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("SPIRE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(keep) / name)


def test_question_to_the_highlighted_sentence(browser: Any, server: SpireServer, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ms = _ask(browser, server.url, QUESTION, max_citations="4")  # the cut: 4 named, the rest context
    print(f"\nthe viewer's first query answered in {ms:.0f} ms")
    first = browser.find_element(By.CSS_SELECTOR, "#results > li.result")
    assert "20.5. Write Ahead Log" in first.find_element(By.CSS_SELECTOR, "h2").text  # the page's title
    assert "Checkpoints" in first.find_element(By.CSS_SELECTOR, ".crumbs").text  # its heading chain
    citation = first.find_element(By.CSS_SELECTOR, "ol.evidence > li")
    assert PHRASE in citation.text
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.evidence > li")) == 4
    assert "of" in browser.find_element(By.CSS_SELECTOR, "#summary .cost").text  # cost against the budget
    context = first.find_element(By.CSS_SELECTOR, ".context")  # delivered, not cited: apart and muted
    assert context.find_elements(By.CSS_SELECTOR, "li") and context.value_of_css_property("color") == MUTED
    _screenshot(browser, tmp_path, "viewer-results.png")

    link = citation.find_element(By.CSS_SELECTOR, "a.cite")
    number = link.find_element(By.CSS_SELECTOR, ".num").text.strip("[]")
    results = browser.current_window_handle
    link.click()
    WebDriverWait(browser, 60).until(lambda d: len(d.window_handles) == 2)
    browser.switch_to.window(next(h for h in browser.window_handles if h != results))
    try:
        WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.ID, f"spire-cite-{number}"))
        assert browser.current_url.endswith(f"#spire-cite-{number}")
        marks = browser.find_elements(By.CSS_SELECTOR, f'mark.spire-cite[data-citation="{number}"]')
        assert PHRASE in " ".join(m.text for m in marks)
        anchor = browser.find_element(By.ID, f"spire-cite-{number}")
        assert anchor.is_displayed() and anchor.location["y"] > 900  # far down the page: scrolled to it
        assert browser.execute_script("return window.scrollY") > 0  # the view moved to the citation
        assert not browser.find_elements(By.TAG_NAME, "script")
        assert browser.find_elements(By.CSS_SELECTOR, "mark.spire-cite:not([data-citation='" + number + "'])")
        _screenshot(browser, tmp_path, "viewer-source.png")
    finally:
        browser.close()
        browser.switch_to.window(results)


def test_a_hostile_question_and_page_title_show_as_text(browser: Any, hostile_server: SpireServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    question = f"{HOSTILE} What does the quokka eat?"
    _ask(browser, hostile_server.url, question)
    assert browser.find_element(By.CSS_SELECTOR, "#summary .question").text == question
    first = browser.find_element(By.CSS_SELECTOR, "#results > li.result")
    assert first.find_element(By.CSS_SELECTOR, "h2").text == f"{HOSTILE} Quokka care"
    assert "saltbush" in first.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#summary img, #summary script, #results img, #results script")
    assert browser.execute_script("return window.pwned === undefined")

    results = browser.current_window_handle
    first.find_element(By.CSS_SELECTOR, "a.cite").click()
    WebDriverWait(browser, 60).until(lambda d: len(d.window_handles) == 2)
    browser.switch_to.window(next(h for h in browser.window_handles if h != results))
    try:
        assert browser.find_elements(By.CSS_SELECTOR, "mark.spire-cite")
        assert not browser.find_elements(By.CSS_SELECTOR, "script, img")
        assert browser.title == f"{HOSTILE} Quokka care"
        link = browser.find_element(By.PARTIAL_LINK_TEXT, "feed at night")
        assert not (link.get_attribute("href") or "").startswith("javascript:")
    finally:
        browser.close()
        browser.switch_to.window(results)


def test_the_llm_filter_s_choice_is_shown(browser: Any, example_store: Path, embed_model: BaseEmbedding) -> None:
    from selenium.webdriver.common.by import By

    service = QueryService(load_store(example_store, embed_model=embed_model), llm=FixedLLM(answer="[E1, E99]"))
    for server in serving(service):
        _ask(browser, server.url, QUESTION, budget="300")
        shown = browser.find_element(By.CSS_SELECTOR, "#summary .filter").text
        assert shown == "LLM filter kept E1; unknown labels E99"
