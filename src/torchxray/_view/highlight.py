"""Escaped, syntax-highlighted HTML for source panes (the only place that turns code into HTML).

Pygments escapes ``<``, ``>`` and ``&`` in the code, so a source containing markup is shown, never
run. Line numbers are the file's own; the class's ``forward`` lines carry Pygments' ``hll`` class.

    >>> from torchxray.source import Source
    >>> html = highlight(Source("x = '<b>'\\n", "f.py", 7, None, "m.x"))
    >>> "&lt;b&gt;" in html and ">7<" in html.replace(" ", "")
    True
"""

from __future__ import annotations

import html

from pygments import highlight as _pygmentize
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from ..source import Source

__all__ = ["CSS_CLASS", "highlight", "highlight_code", "highlight_css", "holds"]

CSS_CLASS = "tx-src"


def highlight(source: Source, line: int | None = None) -> str:
    """HTML for a ``Source``: its code with the ``forward`` lines marked, or why there is none.
    ``line`` (absolute, e.g. a call site) is marked instead when the code holds it."""
    if source.text is not None:
        first = source.line or 1
        marked = source.forward_lines
        if line is not None and holds(source, line):
            marked = (line, line)
        return highlight_code(source.text, first_line=first, marked=marked)
    reason = source.reason or "no source available"
    parts = [f'<div class="{CSS_CLASS}-reason">{html.escape(reason)}</div>']
    if source.script_code:  # TorchScript keeps its own code: better than nothing, and labelled
        parts.append(highlight_code(source.script_code))
    return "".join(parts)


def holds(source: Source, line: int) -> bool:
    """Whether the source's text holds absolute line ``line``."""
    if source.text is None:
        return False
    first = source.line or 1
    return first <= line < first + len(source.text.splitlines())


def highlight_code(text: str, *, first_line: int = 1, marked: tuple[int, int] | None = None) -> str:
    """HTML for Python code whose first line is ``first_line``; ``marked`` is an absolute range."""
    hl_lines: list[int] = []
    if marked is not None:
        # Pygments counts hl_lines from the snippet's first line, whatever linenostart says.
        first, last = marked
        hl_lines = list(range(first - first_line + 1, last - first_line + 2))
    formatter = HtmlFormatter(
        cssclass=CSS_CLASS,
        linenos="inline",
        linenostart=first_line,
        hl_lines=hl_lines,
        wrapcode=True,
    )
    # stripnl=False: a stripped leading blank line would shift every line number after it.
    return _pygmentize(text, PythonLexer(stripnl=False), formatter)


def highlight_css(style: str = "default") -> str:
    """CSS for ``highlight``'s HTML, scoped to ``.tx-src``, in a Pygments ``style``."""
    formatter = HtmlFormatter(style=style, cssclass=CSS_CLASS)
    scope = f".{CSS_CLASS}"
    # Pygments' own line-number rules are global (``pre``, ``span.linenos``) and would restyle
    # other code on the page, so those few are written here, scoped.
    own = [
        f"{scope} pre {{ line-height: 125%; margin: 0; }}",
        f"{scope} span.linenos {{ color: #999; padding: 0 8px 0 4px; user-select: none; }}",
        # Marked lines are blocks, one under another (an inline-block inside `white-space: pre`
        # laid them side by side); js/styles.css gives them the theme's colour.
        f"{scope} .hll {{ display: block; }}",
        f"{scope}-reason {{ font-style: italic; padding: 4px 0; }}",
    ]
    rules = formatter.get_background_style_defs(scope) + formatter.get_token_style_defs(scope)
    return "\n".join(rules + own) + "\n"
