"""`report build --all` as a site, opened in headless Chromium the way a reader opens it: no console
errors, every internal link lands on an element, every link between pages lands on a file, the
charts are drawn, and at 600 px the page does not scroll sideways. Runs where Debian's chromium and
chromium-driver are installed (CI installs them) and selenium is; skipped elsewhere, saying why."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="Chromium and chromedriver are not installed "
                                "(Debian: apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def site(reports):
    """`report build --all --html-only` of the committed logs, as conftest's session builds it once
    (tests/test_build.py reads its index too)."""
    return reports.site().out


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--allow-file-access-from-files"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield driver
    driver.quit()


def _pages(site: Path) -> list[Path]:
    return [site / "index.html", *sorted(site.glob("*/worklog.html"))]


def test_every_page_loads_without_console_errors_and_draws_its_charts(site, browser):
    for page in _pages(site):
        browser.set_window_size(1280, 900)
        browser.get(page.as_uri())
        errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == [], (page, errors)
        sizes = browser.execute_script(
            "return [...document.querySelectorAll('figure.chart svg')].map(s => s.getBoundingClientRect())"
            ".map(r => [r.width, r.height]);")
        if page.name == "worklog.html":
            assert sizes, f"{page}: no chart"
        assert all(w > 200 and h > 100 for w, h in sizes), (page, sizes)


def test_every_link_lands(site, browser):
    wanted: dict[Path, set[str]] = {}  # file -> the ids links ask of it
    for page in _pages(site):
        browser.get(page.as_uri())
        links = browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href);")
        assert links, page
        for href in links:
            url = urlparse(href)
            if url.scheme in ("http", "https", "mailto"):
                continue
            target = Path(unquote(url.path))
            assert url.scheme == "file" and target.is_file(), (page, href)
            ids = wanted.setdefault(target, set())
            if url.fragment:
                ids.add(unquote(url.fragment))
    for target, ids in wanted.items():
        browser.get(target.as_uri())
        missing = browser.execute_script("return arguments[0].filter(i => document.getElementById(i) === null);",
                                         sorted(ids))
        assert missing == [], (target, missing)


def test_no_sideways_scrolling_at_600px(site, browser):
    browser.set_window_size(600, 900)
    for page in _pages(site):
        browser.get(page.as_uri())
        inner, scroll = browser.execute_script(
            "return [document.documentElement.clientWidth, document.documentElement.scrollWidth];")
        wide = browser.execute_script(
            "const w = document.documentElement.clientWidth; return [...document.body.querySelectorAll('*')]"
            ".filter(e => e.getBoundingClientRect().right > w + 1 && getComputedStyle(e).position !== 'absolute')"
            ".slice(0, 5).map(e => e.tagName + '.' + e.className);")
        assert scroll <= inner + 1, (page, inner, scroll, wide)
