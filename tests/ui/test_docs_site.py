"""The documentation site as a reader opens it: the built site (site/, `make docs`) served on
127.0.0.1, the home page, a guide page, the API page of `tx.explore` and a notebook page, each
with its title, its code blocks and its pictures loaded, no console error and no failed request.

`make test` builds the site (`make docs`) before pytest runs; run alone, this test builds it
into a temporary folder when site/ is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import browser_page
from lab import ROOT, Server, free_port
from playwright.sync_api import Browser, Page, Request, expect

pytestmark = pytest.mark.ui

# (path, what the page's title starts with, what its first heading says)
PAGES = [
    ("", "torchxray", "torchxray"),
    ("guide/probes/", "Probes", "Probes: what every layer receives and returns"),
    ("api/functions/explore/", "tx.explore", "tx.explore"),
    ("notebooks/01-explore/", "A tour of torchxray", "A tour of torchxray"),
]


class Site(Server):
    """`python -m http.server` on 127.0.0.1 over a built site."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.root = root
        self.log_path = workdir / "http.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        cmd = [sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1"]
        cmd += ["--directory", str(self.root)]
        self.spawn("http.server", cmd, self.root, dict(os.environ), f"{self.url}/", timeout)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    built = ROOT / "site"
    if not (built / "index.html").is_file():
        built = tmp_path_factory.mktemp("site")
        mkdocs = Path(sys.executable).with_name("mkdocs")
        subprocess.run(
            [
                str(mkdocs),
                "build",
                "--strict",
                "--site-dir",
                str(built),
            ],  # not --quiet: it hides --strict's warnings
            cwd=ROOT,
            check=True,
            env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        )
    with Site(built, tmp_path_factory.mktemp("http")) as server:
        yield server


# The one request a page makes off the site: Material's repository link asks GitHub for the
# repository's stars (it fails quietly offline). Anything else (a font, a script from a CDN)
# would be a page that does not read offline.
ELSEWHERE = {"api.github.com"}


def _read(page: Page, url: str, title: str, heading: str) -> None:
    failed: list[str] = []
    hosts: set[str] = set()
    origin = url.split("/", 3)[:3]
    local = "/".join(origin)

    def note(r: Request) -> None:
        if not r.url.startswith(local) and not r.url.startswith("data:"):
            hosts.add(urlsplit(r.url).hostname or r.url)

    page.on("request", note)
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "requestfailed",
        lambda r: failed.append(f"{r.failure} {r.url}") if r.url.startswith(local) else None,
    )
    page.goto(url)
    page.wait_for_load_state("networkidle")
    expect(page).to_have_title(f"{title} - torchxray" if title != "torchxray" else "torchxray")
    # The heading, then its permalink ("¶").
    expect(page.locator("article h1").first).to_have_text(re.compile(rf"^{re.escape(heading)}"))
    code = page.locator("article pre")
    assert code.count() > 0, f"{url}: no code block"
    expect(code.first).to_be_visible()
    # Every picture on the page loaded (a broken src gives naturalWidth 0).
    images = page.locator("article img")
    widths = images.evaluate_all("imgs => imgs.map(i => [i.getAttribute('src'), i.naturalWidth])")
    broken = [src for src, width in widths if not width]
    assert not broken, f"{url}: pictures that did not load: {broken}"
    assert not failed, f"{url}: requests that failed: {failed}"
    assert hosts <= ELSEWHERE, f"{url}: requests off the site: {sorted(hosts - ELSEWHERE)}"
    page.remove_listener("request", note)


def test_the_site_reads_in_a_browser(
    browser: Browser, site: Site, shots: Path, request: pytest.FixtureRequest
) -> None:
    # browser_page fails the test on any console error or uncaught exception in the page.
    with browser_page(browser, site.url, shots, request) as page:
        # The test machine has no network: GitHub's answer (the repository's stars, which the
        # header shows) is given here, as a reader online would get one.
        page.route(
            "https://api.github.com/**",
            lambda route: route.fulfill(json={"stargazers_count": 0, "forks_count": 0}),
        )
        for path, title, heading in PAGES:
            _read(page, f"{site.url}/{path}", title, heading)
            name = path.strip("/").replace("/", "-") or "home"
            page.screenshot(path=str(shots / f"docs-{name}.png"))

        # The home page shows the widget's picture; the API page the docstring's parts.
        page.goto(f"{site.url}/")
        expect(page.locator("article img").first).to_be_visible()
        page.goto(f"{site.url}/api/functions/explore/")
        article = page.locator("article")
        expect(article).to_contain_text("Open the Explorer on")
        expect(article.get_by_text("Parameters:", exact=True)).to_be_visible()
        expect(article.get_by_text("Returns:", exact=True)).to_be_visible()
        expect(
            article.locator("pre").filter(has_text="tx.explore(demo.resnet_ish()")
        ).to_have_count(1)
        # The notebook page: its code cells, shown without outputs (mkdocs.yml says why).
        page.goto(f"{site.url}/notebooks/01-explore/")
        expect(page.locator("article")).to_contain_text("tx.walk(model)")
        download = page.get_by_title("Download the notebook (.ipynb)")
        expect(download).to_have_attribute("href", re.compile(r"01-explore\.ipynb$"))
