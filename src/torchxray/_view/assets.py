"""The built frontend (static/, made by ``make js``) and the standalone read-only page of
``Explorer.to_html``: the bundle, the CSS (with Pygments colours for light and dark themes) and the
widget state inlined, so the page needs neither a kernel nor the network.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
from pathlib import Path
from typing import Any

__all__ = ["STATIC", "bundle", "packed", "page_parts", "read", "standalone_page", "unpacked"]

STATIC = Path(__file__).resolve().parent.parent / "static"


def read(name: str) -> str:
    """One built file of static/ (``widget.js``, ``viz.js``, ...), as text."""
    path = STATIC / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: build the frontend with `make js`")
    return path.read_text(encoding="utf-8")


# The state, the code and the CSS travel gzip-compressed and base64-encoded: base64 so that no "</script>"
# inside them can end their element early, gzip because the state repeats itself (the same keys
# and class names in every row, form and overview: 1.8 MB of JSON is 80 KB gzipped for timm's
# efficientnet_b0) and viz.js is 1.2 MB. The browser's own DecompressionStream unpacks them, so the
# page stays one self-contained file that opens from file:// with no network; the graph renderer
# is unpacked only when a graph is first drawn.
_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ margin: 16px; }} #tx-root > .tx-root {{ height: calc(100vh - 34px); }}
@media (prefers-color-scheme: dark) {{ body {{ background: #0d1117; }} }}</style></head>
<body><div id="tx-root"></div>
<script type="text/plain" id="tx-css" data-encoding="gzip+base64">{css}</script>
<script type="text/plain" id="tx-state" data-encoding="gzip+base64">{state}</script>
<script type="text/plain" id="tx-bundle" data-encoding="gzip+base64">{bundle}</script>
<script type="text/plain" id="tx-viz" data-encoding="gzip+base64">{viz}</script>
<script type="module">
const root = document.getElementById("tx-root");
const text = async (id) => {{
  const bytes = Uint8Array.from(atob(document.getElementById(id).textContent), (c) => c.charCodeAt(0));
  const unpacked = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(unpacked).text();
}};
if (typeof DecompressionStream === "undefined") {{
  root.textContent = "This torchxray page needs a browser that can unpack gzip (DecompressionStream: " +
    "Chrome or Edge 80, Firefox 113, Safari 16.4 or later).";
}} else {{
  const [css, state, code] = await Promise.all([text("tx-css"), text("tx-state"), text("tx-bundle")]);
  document.head.appendChild(document.createElement("style")).textContent = css;
  const url = URL.createObjectURL(new Blob([code], {{ type: "text/javascript" }}));
  const mod = await import(url);
  const viz = document.getElementById("tx-viz").textContent ? {{ viz: () => text("tx-viz") }} : {{}};
  mod.mountSnapshot(root, JSON.parse(state), viz);
}}
</script></body></html>
"""


def packed(data: bytes) -> str:
    """`data` as the page carries it: gzip (mtime 0: the same state gives the same page), then
    base64."""
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii")


def unpacked(text: str) -> bytes:
    """What ``packed`` made, back (for tests and the size bench)."""
    return gzip.decompress(base64.b64decode(text))


@functools.lru_cache(maxsize=2)
def _packed_file(path: Path, stamp: tuple[int, int]) -> str:
    # viz.js (1.2 MB) takes ~0.1 s to compress at level 9: once per build of it, not per page.
    return packed(path.read_bytes())


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
    if viz.is_file():
        stat = viz.stat()
        viz_text = _packed_file(viz, (stat.st_mtime_ns, stat.st_size))
    else:
        viz_text = ""
    return _PAGE.format(
        title=html.escape(title),
        css=packed(css.encode("utf-8")),
        state=packed(json.dumps(state, separators=(",", ":")).encode("utf-8")),
        bundle=packed(js.encode("utf-8")),
        viz=viz_text,
    )


def page_parts(page: str) -> dict[str, tuple[int, int]]:
    """Bytes of each inlined part of a ``standalone_page``: {"tx-state": (in the page, unpacked),
    ...}, and "page" for the whole file (the size bench's breakdown)."""
    parts = {"page": (len(page.encode("utf-8")), len(page.encode("utf-8")))}
    for element in ("tx-css", "tx-state", "tx-bundle", "tx-viz"):
        start = page.index(f'id="{element}"')
        start = page.index(">", start) + 1
        body = page[start : page.index("</script>", start)]
        parts[element] = (len(body), len(unpacked(body)) if body else 0)
    return parts
