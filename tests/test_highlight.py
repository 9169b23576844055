"""highlight(): escaped Pygments HTML with the file's line numbers and forward lines marked."""

from __future__ import annotations

import re

import torch.nn as nn
from fixtures.models import TinyCNN

from torchxray._view.highlight import CSS_CLASS, highlight, highlight_code, highlight_css
from torchxray.source import Source, source


def line_numbers(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<span class="linenos">\s*(\d+)</span>', html)]


def marked_numbers(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<span class="hll"><span class="linenos">\s*(\d+)<', html)]


def test_markup_in_source_is_escaped() -> None:
    text = 'class X:\n    doc = "</code></pre><script>alert(1)</script>"  # <b> & co\n'
    html = highlight(Source(text, "x.py", 1, None, "m.X"))
    assert "<script" not in html and html.count("</pre>") == 1 and html.count("</code>") == 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt; &amp; co" in html
    assert html.count("<pre") == 1 and html.startswith(f'<div class="{CSS_CLASS}">')


def test_line_numbers_are_the_files_and_forward_is_marked() -> None:
    src = source(TinyCNN)
    assert src.line is not None and src.end_line is not None and src.forward_lines is not None
    html = highlight(src)
    assert line_numbers(html) == list(range(src.line, src.end_line + 1))
    first, last = src.forward_lines
    assert marked_numbers(html) == list(range(first, last + 1))


def test_leading_blank_lines_keep_numbering() -> None:
    html = highlight_code("\n\nx = 1\ny = 2\n", first_line=10, marked=(12, 12))
    assert line_numbers(html) == [10, 11, 12, 13]
    assert marked_numbers(html) == [12]


def test_no_source_shows_escaped_reason() -> None:
    html = highlight(Source(None, None, None, "Foo<T> is implemented in C & friends", "m.Foo"))
    assert (
        html
        == f'<div class="{CSS_CLASS}-reason">Foo&lt;T&gt; is implemented in C &amp; friends</div>'
    )
    assert highlight(source(int)).startswith(f'<div class="{CSS_CLASS}-reason">int is a built-in')


def test_torchscript_code_is_shown_under_the_reason() -> None:
    src = Source(
        None, None, None, "TorchScript", "m.M", script_code="def forward(x):\n  return x\n"
    )
    html = highlight(src)
    assert html.startswith(
        f'<div class="{CSS_CLASS}-reason">TorchScript</div><div class="{CSS_CLASS}">'
    )
    assert line_numbers(html) == [1, 2] and "forward" in html


def test_css_is_scoped() -> None:
    css = highlight_css()
    rules = [line for line in css.splitlines() if line.strip()]
    assert rules and all(line.startswith(f".{CSS_CLASS}") for line in rules)
    assert f".{CSS_CLASS} .hll" in css and f".{CSS_CLASS} .k " in css
    assert highlight_css("monokai") != css


def test_real_module_source_round_trips_text() -> None:
    html = highlight(source(nn.ReLU()))
    plain = re.sub(r'<span class="linenos">[^<]*</span>', "", html)
    plain = re.sub(r"<[^>]+>", "", plain).replace("&gt;", ">").replace("&lt;", "<")
    plain = plain.replace("&quot;", '"').replace("&#39;", "'").replace("&amp;", "&")
    assert plain.strip() == (source(nn.ReLU).text or "").strip()
