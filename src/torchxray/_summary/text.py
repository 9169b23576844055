"""The summary's formatting: rows and totals as torchinfo lays them out (a tree of layers with
output shape and parameter count, then totals and sizes), and as CSV.

    >>> from torchxray._summary.records import Output, Row
    >>> outs = (Output("[0]", (2, 3, 8), "float32"), Output("[1][0]", (1, 2, 8), "float32"))
    >>> row = Row("lstm", "lstm", "LSTM", 1, True, False, 1, 448, 448, 448, 448, None, 1, outs, 0, None)
    >>> output_lines(row)
    ['[0]: [2, 3, 8]', '[1][0]: [1, 2, 8]']
    >>> print(csv_text([row]).splitlines()[1])
    lstm,lstm,LSTM,1,1,1,"[0]: [2, 3, 8]; [1][0]: [1, 2, 8]",448,448,448,448,,,,0
    >>> mult_adds_text(4_089_184_256), size_text(102_228_128), size_text(232)
    ('4.09 G (4,089,184,256)', '102.23 MB (102,228,128 bytes)', '232 bytes')
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from .records import Output, Row
from .stats import Totals

__all__ = ["SHARED_MARK", "csv_text", "mult_adds_text", "output_lines", "size_text", "table"]

LABEL_MAX = 60  # characters of the layer column before it is cut with "…"
SHAPE_MAX = 48
OUTPUTS_SHOWN = 3  # output tensors listed per row; the rest as "… +N more"
GAP = "   "


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _one(out: Output, alone: bool) -> str:
    # A lone plain tensor (or a one-tuple's) is just its shape; named leaves say where they sat.
    if alone and out.name in ("", "[0]"):
        return _shape(out.shape)
    return f"{out.name or '(tensor)'}: {_shape(out.shape)}"


def output_lines(row: Row, limit: int | None = OUTPUTS_SHOWN) -> list[str]:
    """The output column of a row, one line per tensor (at most `limit`, then "… +N more")."""
    outs = row.outputs
    if not outs:
        return ["--"]
    lines = [_one(o, len(outs) == 1) for o in outs]
    if limit is not None and len(lines) > limit:
        lines = [*lines[:limit], f"… +{len(lines) - limit} more"]
    return lines


def _label(row: Row) -> str:
    if row.depth == 0:
        return row.cls
    text = f"{row.name} ({row.cls})"
    if row.shared_with is not None:
        text = f"{row.name} ({row.cls}, same module as {row.shared_with or '(model)'})"
    if row.count > 1:
        text += f" ×{row.count}"
    return text


SHARED_MARK = " *"  # after a Param # figure that leaves out tensors a row above counts


def _params(row: Row) -> str:
    if row.shared_with is not None or (row.shared and not row.params):
        return "(shared)"
    figure = f"{row.params:,}" if row.params else "--"
    return figure + SHARED_MARK if row.shared else figure


def _prefixes(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """Each row's tree prefix ("│ ├─") and the prefix of its continuation lines."""
    out: list[tuple[str, str]] = []
    lasts: list[bool] = []  # per level >= 1: whether the open ancestor there was its parent's last
    for row in rows:
        del lasts[max(row.depth - 1, 0) :]
        bars = "".join("  " if last else "│ " for last in lasts)
        if row.depth == 0:
            head, cont = "", "│ " if row.expanded else ""
        else:
            head = bars + ("└─" if row.last else "├─")
            cont = bars + ("  " if row.last else "│ ") + ("│ " if row.expanded else "  ")
            lasts.append(row.last)
        out.append((head, cont))
    return out


def _scaled(n: int, units: Sequence[tuple[str, float]]) -> str | None:
    for unit, size in units:
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return None


def mult_adds_text(n: int) -> str:
    """``4.09 G (4,089,184,256)``; below a million, the count alone."""
    short = _scaled(n, (("T", 1e12), ("G", 1e9), ("M", 1e6)))
    return f"{short} ({n:,})" if short else f"{n:,}"


def size_text(n: int) -> str:
    """``102.23 MB (102,228,128 bytes)`` (decimal units, as torchinfo's MB)."""
    short = _scaled(n, (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)))
    return f"{short} ({n:,} bytes)" if short else f"{n:,} bytes"


def table(
    rows: Sequence[Row],
    totals: Totals,
    header: Sequence[str],
    *,
    probed: bool,
    notes: Sequence[str] = (),
    no_mult_adds: str = "",
) -> str:
    """The text summary. Without a probe (``probed=False``) the output column and the sizes
    that need one are left out, as torchinfo leaves them out without an input."""
    labels, shapes = [], []
    for (head, cont), row in zip(_prefixes(rows), rows):
        outs = [_cut(s, SHAPE_MAX) for s in output_lines(row)] if probed else [""]
        labels.append([_cut(head + _label(row), LABEL_MAX)] + [cont] * (len(outs) - 1))
        shapes.append(outs)
    lw = max([len("Layer (type)")] + [len(s) for ls in labels for s in ls])
    sw = max([len("Output shape")] + [len(s) for ss in shapes for s in ss]) if probed else 0
    pw = max([len("Param #")] + [len(_params(r)) for r in rows])
    width = lw + len(GAP) + (sw + len(GAP) if probed else 0) + pw
    rule = "=" * width

    def line(label: str, shape: str, params: str) -> str:
        cells = [label.ljust(lw)] + ([shape.ljust(sw)] if probed else []) + [params]
        return GAP.join(cells).rstrip()

    out = [*header, rule, line("Layer (type)", "Output shape", "Param #"), rule]
    for row, ls, ss in zip(rows, labels, shapes):
        out.append(line(ls[0], ss[0], _params(row)))
        out.extend(line(label, shape, "") for label, shape in zip(ls[1:], ss[1:]))
    out += [
        rule,
        f"Total params: {totals.params:,}",
        f"Trainable params: {totals.trainable:,}",
        f"Non-trainable params: {totals.non_trainable:,}",
    ]
    if probed:
        if totals.mult_adds is not None:
            out.append(f"Total mult-adds: {mult_adds_text(totals.mult_adds)}")
        else:
            out.append(f"Total mult-adds: -- ({no_mult_adds or 'not counted'})")
    out.append(rule)
    if probed:
        out += [
            f"Input size: {size_text(totals.input_bytes or 0)}",
            f"Forward/backward pass size: {size_text(totals.pass_bytes or 0)}",
        ]
    out += [
        f"Params size: {size_text(totals.param_bytes)}",
        f"Buffers size: {size_text(totals.buffer_bytes)}",
        f"Estimated total size: {size_text(totals.total_bytes)}",
        rule,
        *notes,
    ]
    return "\n".join(out)


CSV_COLUMNS = (
    "path", "name", "class", "depth", "count", "calls", "outputs", "params", "params_own",
    "params_total", "trainable", "mult_adds", "flops", "shared_with", "shared",
)  # fmt: skip


def csv_text(rows: Sequence[Row]) -> str:
    """One line per row (a header first); outputs as "name: [shape]" joined by "; "."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        outs = "; ".join(output_lines(r, None)) if r.outputs else ""
        w.writerow(
            (
                r.path, r.name, r.cls, r.depth, r.count, r.calls, outs, r.params, r.params_own,
                r.params_total, r.trainable, "" if r.flops is None else r.flops // 2,
                "" if r.flops is None else r.flops, r.shared_with or "", r.shared,
            )
        )  # fmt: skip
    return buf.getvalue()
