"""The built book in a real browser: pages load, figures are decoded, tables have rows."""

from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.skip("headless Chromium is not installed (make setup-browser installs chromium and chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _open(driver, page: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def _images(driver) -> list[tuple[str, bool]]:
    return driver.execute_script(
        "return Array.from(document.images).map(i => [i.src, i.complete && i.naturalWidth > 0]);")


def _screenshot(driver, quick_book, name: str) -> Path:
    folder = quick_book.book_index.parent / "_screenshots"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def test_front_page_links_every_chapter(quick_book, browser):
    from selenium.webdriver.common.by import By

    _open(browser, quick_book.book_index)
    assert "gradient" in browser.title.lower()
    links = {a.get_attribute("href").rsplit("/", 1)[-1] for a in browser.find_elements(By.CSS_SELECTOR, "nav a")
             if a.get_attribute("href")}
    for page in ("methods.html", "math_reasoning.html", "wiki_knowledge.html", "summary.html", "reproducibility.html"):
        assert page in links, page
    assert all(loaded for _, loaded in _images(browser))
    assert _screenshot(browser, quick_book, "index").stat().st_size > 0


def test_family_chapter_shows_figures_and_tables(quick_book, browser):
    from selenium.webdriver.common.by import By

    page = quick_book.book_index.parent / "book" / "notebooks" / "math_reasoning.html"
    _open(browser, page)
    images = _images(browser)
    figures = [src for src, _ in images if "_images" in src or src.startswith("data:image")]
    assert len(figures) >= 4, images
    assert all(loaded for _, loaded in images), [src for src, ok in images if not ok]
    rows = browser.find_elements(By.CSS_SELECTOR, "table tbody tr")
    assert len(rows) >= 10
    assert "quantised (GGUF) then dequantised" in browser.find_element(By.TAG_NAME, "body").text
    assert _screenshot(browser, quick_book, "math_reasoning").stat().st_size > 0
