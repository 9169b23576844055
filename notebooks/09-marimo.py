"""The explorer in a marimo notebook: `marimo edit notebooks/09-marimo.py`.

marimo shows an anywidget wrapped in `mo.ui.anywidget(...)` (a widget that is a cell's last value is
wrapped for you). Everything in the JupyterLab tour works here too: select a module, read its Source,
edit it in the Form tab and Apply, Undo, and read the probe's results and the summary (Probe tab).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full")


@app.cell
def _():
    import marimo as mo
    import torch

    import torchxray as tx
    from torchxray import demo

    return demo, mo, torch, tx


@app.cell
def _(demo):
    # A small ResNet and a batch of images, built in code (no downloads).
    model = demo.resnet_ish()
    x = demo.images()
    return model, x


@app.cell
def _(mo, model, tx, x):
    ex = tx.explore(model, x)
    mo.ui.anywidget(ex)
    return (ex,)


@app.cell
def _(ex, mo):
    # The same text as the Probe tab's "Copy summary", and as print(ex) in a terminal.
    mo.plain_text(ex.summary(depth=1))
    return


if __name__ == "__main__":
    app.run()
