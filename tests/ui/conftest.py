"""Fixtures for the browser flows: one JupyterLab per session, a fresh Chromium page per flow.

Chromium is Debian's (`apt-get install chromium`); Playwright cannot download browsers here.
Without it the flows skip locally but fail in CI, where a skip would hide a broken widget.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from lab import ROOT, Lab
from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = os.environ.get("TORCHXRAY_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where the sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
# Kernel start and first import of torch on two shared cores take tens of seconds.
TIMEOUT_MS = 90_000
# Assertions wait for the kernel's replies (probe, pages, source); 5 s is too tight on 2 cores.
expect.set_options(timeout=30_000)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def chromium() -> str:
    if os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    message = f"browser tests need Chromium at {CHROMIUM}: apt-get install -y chromium"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run them; `make test` installs it)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def static_bundle() -> Path:
    bundle = ROOT / "src" / "torchxray" / "static" / "widget.js"
    if not bundle.exists():
        pytest.fail(f"{bundle} is missing: build the widget with `make js` (npm run build)")
    return bundle


@pytest.fixture(scope="session")
def lab(
    chromium: str, static_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("jupyterlab")) as server:
        yield server


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where flows save screenshots (on failure, and the ones worth looking at)."""
    path = Path(os.environ.get("TORCHXRAY_SHOTS") or tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def browser_page(
    browser: Browser, origin: str, shots: Path, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A fresh page on a host served at `origin` (JupyterLab, Notebook 7, marimo): 1400x900, the
    clipboard allowed; a failure leaves a screenshot; dialogs and page errors fail the flow."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, device_scale_factor=1)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    dialogs: list[str] = []
    page_errors: list[str] = []

    def on_dialog(dialog) -> None:  # noqa: ANN001 - playwright's Dialog
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("pageerror", lambda exc: page_errors.append(f"{exc.name}: {exc.message}\n{exc.stack}"))
    pg.on(
        "console",
        lambda m: page_errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None,
    )
    request.node.dialogs = dialogs
    request.node.page_errors = page_errors
    try:
        yield pg
    finally:
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            name = re.sub(r"[^\w.-]+", "_", request.node.name)
            shot = shots / f"FAILED-{name}.png"
            try:
                pg.screenshot(path=str(shot), full_page=True)
                sys.stderr.write(f"\nscreenshot of the failure: {shot}\n")
            except Exception as exc:  # noqa: BLE001 - a screenshot must not hide the failure
                sys.stderr.write(f"\nno screenshot: {exc}\n")
            if page_errors:
                sys.stderr.write("page errors:\n  " + "\n  ".join(page_errors) + "\n")
        context.close()
    # A widget never opens alert/confirm/prompt; one that fired means model text ran as code.
    assert not dialogs, f"dialogs fired: {dialogs}"
    # Uncaught exceptions and console errors (none from the hosts themselves in these flows).
    assert not page_errors, "errors in the page:\n" + "\n".join(page_errors)


@pytest.fixture
def page(browser: Browser, lab: Lab, shots: Path, request: pytest.FixtureRequest) -> Iterator[Page]:
    try:
        with browser_page(browser, lab.url, shots, request) as pg:
            yield pg
    finally:
        try:
            lab.shutdown_kernels()
        except Exception as exc:  # noqa: BLE001
            sys.stderr.write(f"could not shut kernels down: {exc}\n")


@pytest.fixture
def dialogs(page: Page, request: pytest.FixtureRequest) -> list[str]:
    """The alert/confirm/prompt dialogs this flow's page opened (dismissed), as they happen."""
    return request.node.dialogs
