"""The built frontend (static/, made by ``make js``) and the standalone read-only page of
``Explorer.to_html``: the bundle, the CSS (with Pygments colours for light and dark themes) and the
widget state inlined, so the page needs neither a kernel nor the network.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

__all__ = ["STATIC", "bundle", "read", "standalone_page"]

STATIC = Path(__file__).resolve().parent.parent / "static"


def read(name: str) -> str:
    """One built file of static/ (``widget.js``, ``viz.js``, ...), as text."""
    path = STATIC / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: build the frontend with `make js`")
    return path.read_text(encoding="utf-8")


# Code travels base64-encoded so that no "</script>" inside it can end its element early.
_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>{css}</style>
<style>body {{ margin: 16px; }} #tx-root > .tx-root {{ height: calc(100vh - 34px); }}
@media (prefers-color-scheme: dark) {{ body {{ background: #0d1117; }} }}</style></head>
<body><div id="tx-root"></div>
<script type="text/plain" id="tx-state">{state}</script>
<script type="text/plain" id="tx-bundle">{bundle}</script>
<script type="text/plain" id="tx-viz">{viz}</script>
<script type="module">
const text = (id) => new TextDecoder().decode(
  Uint8Array.from(atob(document.getElementById(id).textContent), (c) => c.charCodeAt(0)));
const url = URL.createObjectURL(new Blob([text("tx-bundle")], {{ type: "text/javascript" }}));
const mod = await import(url);
const viz = text("tx-viz");
mod.mountSnapshot(document.getElementById("tx-root"), JSON.parse(text("tx-state")), viz ? {{ viz }} : {{}});
</script></body></html>
"""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def bundle() -> tuple[str, str]:
    js, css = STATIC / "widget.js", STATIC / "widget.css"
    if not js.is_file() or not css.is_file():
        raise FileNotFoundError(
            f"the torchxray frontend is not built ({js} is missing): run `make js` "
            "(or `npm ci && npm run build`) in the torchxray checkout"
        )
    from .highlight import highlight_css

    styles = css.read_text(encoding="utf-8") + highlight_css() + _dark_css()
    return js.read_text(encoding="utf-8"), styles


def _dark_css() -> str:
    """Pygments colours for dark themes (JupyterLab's and VS Code's); highlight_css is light."""
    from pygments.formatters import HtmlFormatter

    formatter = HtmlFormatter(style="github-dark")
    rules = []
    for theme in ('body[data-jp-theme-light="false"]', "body.vscode-dark"):
        scope = f"{theme} .tx-src"
        rules += formatter.get_background_style_defs(scope) + formatter.get_token_style_defs(scope)
        rules.append(f"{scope} .hll {{ background-color: #2d333b }}")
    # A standalone page (ex.to_html()) in a dark browser: the widget turns dark by itself
    # (styles.css); its code must too, or unstyled names and brackets are near-white on light.
    scope = "body:not([data-jp-theme-light]):not(.vscode-light) .tx-src"
    rules.append("@media (prefers-color-scheme: dark) {")
    rules += formatter.get_background_style_defs(scope) + formatter.get_token_style_defs(scope)
    rules += [f"{scope} .hll {{ background-color: #2d333b }}", "}"]
    return "\n".join(rules) + "\n"


def standalone_page(state: dict[str, Any], title: str) -> str:
    js, css = bundle()
    viz = STATIC / "viz.js"
    return _PAGE.format(
        title=html.escape(title),
        css=css.replace("</", "<\\/"),
        state=_b64(json.dumps(state)),
        bundle=_b64(js),
        viz=_b64(viz.read_text(encoding="utf-8")) if viz.is_file() else "",
    )
