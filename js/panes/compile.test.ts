// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, paneCtx, type FakeNode } from "../fake_model";
import type { BreakRow, CompileState } from "../protocol";
import { Rpc } from "../protocol";
import { TreeView } from "../tree";
import { CompilePane, fileLine, safeUrl, verdict } from "./compile";
import type { Ctx } from "./context";
import { SourcePane, breakTarget } from "./source";

const NET: FakeNode = {
  name: "",
  cls: "Net",
  kids: [
    { name: "embed", cls: "Embedding" },
    { name: "mlp", cls: "CheckedMLP", kids: [{ name: "fc1", cls: "Linear" }, { name: "act", cls: "LoggedGELU" }] },
    { name: "head", cls: "Linear" },
  ],
};

const BREAK: BreakRow = {
  path: "mlp.act",
  cls: "LoggedGELU",
  kind: "logging.Logger method not supported",
  reason: "logging calls <b>break</b>",
  hint: "ignore it\nor move it",
  url: "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html",
  file: "/src/torchxray/demo.py",
  line: 312,
  source: '_log.debug("gelu input %s", tuple(x.shape))',
  src_cls: "torchxray.demo.LoggedGELU",
};

function state(breaks: BreakRow[], extra: Partial<CompileState> = {}): CompileState {
  return {
    status: breaks.length ? "breaks" : "ok", on: true, mode: "fake", breaks, export: [], export_ok: true, error: "",
    notes: [], modules: 6, checked: 5, wall_ms: 120, rev: 1, ...extra,
  };
}

function setup(reply: () => unknown, readonly = false) {
  const errors: string[] = [];
  const selected: string[] = [];
  const opened: [string, string | null, number][] = [];
  const model = new FakeModel({ selected: "", tree_state: firstState(NET) as never });
  const kernel = fakeKernel(NET, {
    compile: () => {
      const r = reply() as Record<string, unknown>;
      if (r.kind !== "error") model.set("compile", { ...r, kind: undefined });
      return r;
    },
  });
  const ctx = paneCtx(kernel, model, readonly, errors, {
    select: (p) => selected.push(p),
    openSource: (p, c, l) => opened.push([p, c, l]),
  });
  const folds: (string | null)[] = [];
  const pane = new CompilePane(ctx, async (f) => {
    folds.push(f ? f.label : null);
  });
  return { pane, model, kernel, errors, selected, opened, folds, ctx };
}

describe("Compile tab", () => {
  it("says what Check does until it is run, then lists the breaks in order as text", async () => {
    const mlp: BreakRow = { ...BREAK, path: "mlp", cls: "CheckedMLP", kind: "Unsupported Tensor.item() call", url: "", line: 331, src_cls: null };
    const { pane, kernel, errors } = setup(() => ({ kind: "compile", ...state([mlp, BREAK]) }));
    pane.show();
    expect(pane.el.textContent).toContain("Not checked yet.");
    expect(pane.el.textContent).toContain("runs again after every Apply, Undo and Redo");
    const check = pane.el.querySelector("button.tx-primary") as HTMLButtonElement;
    expect(check.textContent).toBe("Check");
    check.click();
    expect((pane.el.querySelector(".tx-cprogress") as HTMLElement).hidden).toBe(false); // progress while it runs
    await flush();
    expect(errors).toEqual([]);
    expect(kernel.calls.filter((c) => c.kind === "compile")).toHaveLength(1);
    expect((pane.el.querySelector(".tx-cprogress") as HTMLElement).hidden).toBe(true);
    expect(check.textContent).toBe("Check again");
    expect(pane.el.querySelector(".tx-cverdict")?.textContent).toBe("2 graph breaks, in forward order:");
    const items = [...pane.el.querySelectorAll(".tx-break")];
    expect(items.map((li) => li.querySelector(".tx-cmodule")?.textContent)).toEqual(["mlp (CheckedMLP)", "mlp.act (LoggedGELU)"]);
    // Text, never markup: torch's reason is shown as written.
    expect(items[1].querySelector(".tx-breakreason")?.textContent).toBe("logging calls <b>break</b>");
    expect(items[1].querySelector("b")).toBeNull();
    expect(items[1].querySelector(".tx-hint")?.textContent).toBe("ignore it\nor move it");
    const link = items[1].querySelector("a") as HTMLAnchorElement;
    expect(link.getAttribute("href")).toBe(BREAK.url);
    expect(link.getAttribute("rel")).toContain("noopener");
    expect(link.getAttribute("target")).toBe("_blank");
    expect(items[0].querySelector("a")).toBeNull(); // no page named by torch: no link
    expect(items[1].querySelector(".tx-breakline")?.textContent).toBe(BREAK.source);
  });

  it("a break's module selects its row; its line opens the Source tab where a class holds it", async () => {
    const outside: BreakRow = { ...BREAK, path: "mlp", cls: "CheckedMLP", src_cls: null, file: "/x/helpers.py", line: 9 };
    const { pane, model, selected, opened } = setup(() => null);
    model.set("compile", state([outside, BREAK]));
    pane.show();
    const items = [...pane.el.querySelectorAll(".tx-break")];
    (items[1].querySelector(".tx-cmodule") as HTMLButtonElement).click();
    expect(selected).toEqual(["mlp.act"]);
    const where = items[1].querySelector(".tx-cwhere") as HTMLButtonElement;
    expect(where.textContent).toBe("demo.py:312");
    where.click();
    expect(opened).toEqual([["mlp.act", "torchxray.demo.LoggedGELU", 312]]);
    // A line outside every class of the module's MRO: shown, not a link.
    expect(items[0].querySelector(".tx-cwhere")?.tagName).toBe("SPAN");
    expect(items[0].querySelector(".tx-cwhere")?.getAttribute("title")).toBe("/x/helpers.py:9");
  });

  it("shows a failed check as its one sentence, and a refused request without a result", async () => {
    const { pane, model } = setup(() => ({ kind: "error", message: "compile: the compile check needs example inputs" }));
    model.set("compile", state([], { status: "error", error: "dynamo cannot trace this model at all: Unsupported: x" }));
    pane.show();
    expect(pane.el.querySelector(".tx-cerror")?.textContent).toBe("dynamo cannot trace this model at all: Unsupported: x");
    expect(pane.el.querySelector(".tx-breaks")).toBeNull();
    model.set("compile", {});
    (pane.el.querySelector("button.tx-primary") as HTMLButtonElement).click();
    await flush();
    expect(pane.el.textContent).toContain("The check could not run: see the message above.");
  });

  it("lists torch.export's failures, each a link to its row", () => {
    const { pane, model, selected } = setup(() => null);
    const fail = { path: "mlp", cls: "CheckedMLP", kind: "GuardOnDataDependentSymNode", reason: "data-dependent", file: "/a/demo.py", line: 331 };
    model.set("compile", state([], { export: [fail], export_ok: false }));
    pane.show();
    expect(pane.el.querySelector(".tx-cverdict")?.textContent).toMatch(/^One graph/);
    const li = pane.el.querySelector(".tx-exportfails li") as HTMLElement;
    expect(li.textContent).toBe("mlp (CheckedMLP) GuardOnDataDependentSymNode: data-dependent demo.py:331");
    (li.querySelector("button") as HTMLButtonElement).click();
    expect(selected).toEqual(["mlp"]);
  });

  it("folds the tree to the breaking rows on request", async () => {
    const { pane, folds } = setup(() => null);
    pane.show();
    const box = pane.el.querySelector("input[type=checkbox]") as HTMLInputElement;
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    await flush();
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    await flush();
    expect(folds).toEqual(["breaking rows", null]);
  });

  it("shows progress while a patch's re-check follows the probe", () => {
    const { pane, model } = setup(() => null);
    model.set("compile", state([], { status: "running" }));
    pane.show();
    expect((pane.el.querySelector(".tx-cprogress") as HTMLElement).hidden).toBe(false);
    expect(pane.el.querySelector(".tx-cverdict")?.textContent).toBe("Checking again after the patch…");
    model.set("compile", state([BREAK]));
    pane.show();
    expect((pane.el.querySelector(".tx-cprogress") as HTMLElement).hidden).toBe(true);
  });

  it("in a read-only snapshot: no Check, and says why", () => {
    const { pane } = setup(() => null, true);
    pane.show();
    expect((pane.el.querySelector("button.tx-primary") as HTMLButtonElement).disabled).toBe(true);
    expect(pane.el.textContent).toContain("needs a kernel");
  });

  it("helpers: file:line, headline, only http(s) links", () => {
    expect(fileLine("/a/b/demo.py", 3)).toBe("demo.py:3");
    expect(fileLine("", 0)).toBe("(no Python source)");
    expect(verdict({ status: "breaks", breaks: [BREAK] })).toBe("1 graph break, in forward order:");
    expect(verdict({})).toBe("Not checked yet.");
    expect(verdict({ status: "running" })).toBe("Checking again after the patch…");
    expect(safeUrl("javascript:alert(1)")).toBeNull();
    expect(safeUrl(BREAK.url)).toBe(BREAK.url);
  });
});

describe("the tree folded to the breaking rows", () => {
  it("shows only the rows the kernel names, with 'show all' to end it", async () => {
    const kernel = fakeKernel(NET, {
      filter: (m) => {
        expect(m.breaks).toBe(true);
        const rows = [
          { path: "", name: "", cls: "Net", nkids: 3, depth: 0, match: false },
          { path: "mlp", name: "mlp", cls: "CheckedMLP", nkids: 2, depth: 1, match: false },
          { path: "mlp.act", name: "act", cls: "LoggedGELU", nkids: 0, depth: 2, match: true, marks: ["break"] },
        ];
        return { kind: "filter", count: 1, rows, truncated: false };
      },
    });
    const rpc = new Rpc(kernel.invoke as never);
    const tree = new TreeView(
      {
        children: (path, offset, limit, unfold) => rpc.call({ kind: "children", path, offset, limit, unfold }),
        filter: (query, regex, names) => rpc.call({ kind: "filter", query, regex, names }),
      },
      () => undefined,
      () => undefined,
    );
    await tree.setState(firstState(NET) as never);
    expect(tree.visible.map((r) => r.key)).toEqual(["", "embed", "mlp", "head"]);
    let ended = false;
    const fold = async () => {
      const r = await rpc.call({ kind: "filter", query: "", breaks: true });
      return { count: r.count, rows: r.rows, truncated: r.truncated };
    };
    await tree.filter.setFold({ label: "breaking rows", rows: fold, ended: () => (ended = true) });
    expect(tree.visible.map((r) => r.key)).toEqual(["", "mlp", "mlp.act"]);
    expect(tree.el.querySelector(".tx-count")?.textContent).toBe("folded to breaking rows (1)");
    expect(tree.el.querySelector(".tx-mark-break")?.textContent).toBe("breaks");
    const all = tree.el.querySelector(".tx-unfold") as HTMLButtonElement;
    expect(all.hidden).toBe(false);
    all.click();
    await flush();
    expect(ended).toBe(true);
    expect(tree.visible.map((r) => r.key)).toEqual(["", "embed", "mlp", "head"]);
    expect(all.hidden).toBe(true);
  });
});

describe("the Source tab and a breaking module", () => {
  it("marks the selected module's break line in the class that holds it", () => {
    const model = new FakeModel({ selected: "mlp.act", compile: state([BREAK]) as never });
    const ctx = { model } as unknown as Ctx;
    expect(breakTarget(ctx)).toEqual({ path: "mlp.act", cls: "torchxray.demo.LoggedGELU", line: 312, what: "break", kind: BREAK.kind });
    expect(breakTarget(ctx, "mlp.act", 99)).toBeNull(); // a call site's line in the same module
    model.set("selected", "mlp");
    expect(breakTarget(ctx)).toBeNull();
  });

  it("asks for that class with the line as a graph break, and names the break", async () => {
    const reply = { kind: "source", qualname: "torchxray.demo.LoggedGELU", file: BREAK.file, line: 307, html: '<div class="hll">x</div>', reason: null, note: "line 312 (the graph break) is marked", forward_lines: null, cell: null };
    const kernel = fakeKernel(NET, { source: () => reply });
    const model = new FakeModel({ selected: "mlp.act", compile: state([BREAK]) as never, tree_state: firstState(NET) as never });
    const ctx = { rpc: new Rpc(kernel.invoke as never), model, readonly: false } as unknown as Ctx;
    const pane = new SourcePane(ctx);
    await pane.show();
    expect(kernel.calls.at(-1)).toEqual({ kind: "source", path: "mlp.act", cls: BREAK.src_cls, line: 312, what: "break" });
    expect(pane.el.querySelector(".tx-srcbreak")?.textContent).toBe(`graph break: ${BREAK.kind}`);
  });
});
