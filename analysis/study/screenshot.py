"""The README's picture of the book: a screenshot of a built book's first page, and the digest of
that page's text kept beside it, so that a test notices a picture older than the page.

``make screenshot`` builds the quick profile's book and calls ``write_screenshot``: headless
Chromium (through Selenium, a test dependency) renders the first page into ``book/_static/first_page.png`` and ``page_digest`` writes
the sha256 of the page's text, numbers masked (``page_text``), into ``first_page.sha256``. A
browser test compares the digest with the quick book it builds: when the first page's words change,
the test fails until the picture is made again.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from bs4 import BeautifulSoup

from analysis.core.chapters import PROJECT_ROOT
from analysis.core.errors import StudyError

SCREENSHOT = Path("book", "_static", "first_page.png")
DIGEST = SCREENSHOT.with_suffix(".sha256")
WINDOW = (1280, 1400)  # pixels: the first page's opening, as a reader's screen shows it
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")  # make setup-browser


def shown_page(index: Path) -> Path:
    """The page a browser shows for ``index``: the target of its refresh, where the book's root page
    only redirects to the first chapter, else ``index`` itself."""
    soup = BeautifulSoup(Path(index).read_text(encoding="utf-8"), "html.parser")
    refresh = soup.find("meta", attrs={"http-equiv": re.compile("^refresh$", re.I)})
    target = re.search(r"url=(.+)$", str(refresh.get("content", "")), re.I) if refresh else None
    return Path(index).parent / target.group(1).strip() if target else Path(index)


def page_text(index: Path) -> str:
    """The words of a built page's article (after its redirect, ``shown_page``), whitespace collapsed
    and every number masked ("#"): the page as a picture shows it, whatever numbers a run gave."""
    soup = BeautifulSoup(shown_page(index).read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup.body or soup
    for hidden in article.find_all(["script", "style"]):
        hidden.decompose()
    text = " ".join(article.get_text(" ").split())
    return re.sub(r"\d+", "#", text)


def page_digest(index: Path) -> str:
    """The sha256 of ``page_text``."""
    return hashlib.sha256(page_text(index).encode()).hexdigest()


def write_screenshot(index: Path, *, root: Path = PROJECT_ROOT) -> tuple[Path, Path]:
    """Render the built page ``index`` into ``root/SCREENSHOT`` (headless Chromium through Selenium,
    as the browser tests drive it) and its digest into ``root/DIGEST``."""
    index = Path(index).resolve()
    if not index.is_file():
        raise StudyError(f"{index}: no built page (make screenshot builds the quick book first)")
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        raise StudyError("no headless Chromium for the screenshot: `make setup-browser` installs it")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    image, digest = root / SCREENSHOT, root / DIGEST
    image.parent.mkdir(parents=True, exist_ok=True)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(index.as_uri())
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
        if not driver.save_screenshot(str(image)):
            raise StudyError(f"Chromium made no screenshot of {index}")
    finally:
        driver.quit()
    digest.write_text(page_digest(index) + "\n")
    return image, digest
