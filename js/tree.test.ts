// @vitest-environment happy-dom
import { describe, expect, it, vi } from "vitest";
import { fakeKernel, firstState, flush, type FakeNode } from "./fake_model";
import { MAX_DOM_ROWS, TreeView } from "./tree";
import { Rpc, type Item } from "./protocol";

const MODEL: FakeNode = {
  name: "",
  cls: "Net",
  kids: [
    { name: "conv1", cls: "Conv2d", params: 224 },
    { name: "bn1", cls: "BatchNorm2d", params: 16 },
    {
      name: "layer1",
      cls: "Sequential",
      kids: [
        { name: "0", cls: "BasicBlock", kids: [{ name: "conv1", cls: "Conv2d" }] },
        { name: "1", cls: "BasicBlock", kids: [{ name: "conv1", cls: "Conv2d" }] },
      ],
    },
    { name: "<img src=x onerror=alert(1)>", cls: "ReLU" },
  ],
};

function setup(root: FakeNode = MODEL, page = 50) {
  const kernel = fakeKernel(root, {}, page);
  const rpc = new Rpc(kernel.invoke as never);
  const source = {
    children: (parent: string, offset: number, limit: number, unfold: boolean) =>
      rpc.call({ kind: "children", path: parent, offset, limit, unfold }),
    filter: (query: string, regex: boolean) => rpc.call({ kind: "filter", query, regex }),
    reveal: (path: string) => rpc.call({ kind: "reveal", path }),
  };
  const onSelect = vi.fn();
  const onError = vi.fn();
  const view = new TreeView(source, onSelect, onError);
  document.body.appendChild(view.el);
  return { view, kernel, onSelect, onError };
}

const items = (view: TreeView) => [...view.tree.querySelectorAll('[role="treeitem"]')] as HTMLElement[];
const labels = (view: TreeView) => items(view).map((r) => r.getAttribute("aria-label"));

describe("TreeView", () => {
  it("renders a tree of treeitems named by attribute name and class", async () => {
    const { view } = setup();
    await view.setState(firstState(MODEL));
    expect(view.tree.getAttribute("role")).toBe("tree");
    expect(labels(view)).toEqual([
      "(model) Net",
      "conv1 Conv2d",
      "bn1 BatchNorm2d",
      "layer1 Sequential",
      "<img src=x onerror=alert(1)> ReLU",
    ]);
    const layer1 = items(view)[3];
    expect(layer1.getAttribute("aria-expanded")).toBe("false");
    expect(items(view)[1].hasAttribute("aria-expanded")).toBe(false); // a leaf
    expect(items(view)[0].getAttribute("aria-expanded")).toBe("true");
    expect(layer1.getAttribute("aria-level")).toBe("2");
  });

  it("shows a module named like HTML as text", async () => {
    const { view } = setup();
    await view.setState(firstState(MODEL));
    expect(view.el.querySelector("img")).toBeNull();
    const evil = items(view)[4];
    expect(evil.querySelector(".tx-name")?.textContent).toBe("<img src=x onerror=alert(1)>");
  });

  it("fetches children lazily on click and selects", async () => {
    const { view, kernel, onSelect } = setup();
    await view.setState(firstState(MODEL));
    expect(kernel.calls.filter((c) => c.kind === "children")).toHaveLength(0);
    items(view)[3].click();
    await flush();
    expect(onSelect).toHaveBeenCalledWith("layer1");
    expect(kernel.calls.at(-1)).toMatchObject({ kind: "children", path: "layer1" });
    expect(labels(view)).toContain("0 BasicBlock");
    const layer1 = items(view).find((r) => r.getAttribute("aria-label") === "layer1 Sequential")!;
    expect(layer1.getAttribute("aria-expanded")).toBe("true");
    expect(layer1.getAttribute("aria-selected")).toBe("true");
  });

  it("navigates with the keyboard", async () => {
    const { view, onSelect } = setup();
    await view.setState(firstState(MODEL));
    const key = async (k: string) => {
      view.tree.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
      await flush();
    };
    await key("End");
    expect(onSelect).toHaveBeenLastCalledWith("<img src=x onerror=alert(1)>");
    await key("ArrowUp");
    expect(onSelect).toHaveBeenLastCalledWith("layer1");
    await key("ArrowRight"); // opens
    expect(view.isExpanded("layer1")).toBe(true);
    await key("ArrowRight"); // to the first child
    expect(onSelect).toHaveBeenLastCalledWith("layer1.0");
    await key("ArrowLeft"); // to the parent
    expect(onSelect).toHaveBeenLastCalledWith("layer1");
    await key("ArrowLeft"); // closes
    expect(view.isExpanded("layer1")).toBe(false);
    await key("Enter"); // toggles open again
    expect(view.isExpanded("layer1")).toBe(true);
    await key("Home");
    expect(onSelect).toHaveBeenLastCalledWith("");
    expect(view.tree.getAttribute("aria-activedescendant")).toBe(items(view)[0].id);
  });

  it("keeps at most MAX_DOM_ROWS rows in the DOM for 10,000 children", async () => {
    const many: FakeNode = {
      name: "",
      cls: "ModuleList",
      kids: Array.from({ length: 10000 }, (_, i) => ({ name: String(i), cls: "Linear" })),
    };
    const { view } = setup(many, 10000);
    const state = firstState(many);
    await view.setState(state);
    expect(view.visible.length).toBe(10001);
    expect(items(view).length).toBeLessThanOrEqual(MAX_DOM_ROWS);
    const vp = view.el.querySelector(".tx-viewport") as HTMLElement;
    vp.scrollTop = 22 * 5000;
    vp.dispatchEvent(new Event("scroll"));
    expect(labels(view)).toContain("5000 Linear");
    expect(items(view).length).toBeLessThanOrEqual(MAX_DOM_ROWS);
  });

  it("keeps the rows loaded with 'more' when a new state arrives (a probe's results)", async () => {
    const model: FakeNode = { name: "", cls: "Seq", kids: Array.from({ length: 10 }, (_, i) => ({ name: `${i}`, cls: "Linear" })) };
    const { view } = setup(model, 3);
    const state = (rev: number) => {
      const s = firstState(model, rev);
      const first: Item[] = [...s.pages[""].items.slice(0, 3), { more: 7, parent: "", offset: 3, unfold: false }];
      return { ...s, pages: { "": { items: first, total: 10, offset: 0 } } };
    };
    await view.setState(state(1));
    items(view).find((r) => r.getAttribute("aria-label") === "7 more")!.click();
    await flush();
    expect(labels(view)).toEqual(expect.arrayContaining(["5 Linear", "4 more"]));
    await view.setState(state(2));
    await flush();
    // Loaded again up to where the person had got, not further.
    expect(labels(view)).toEqual(expect.arrayContaining(["3 Linear", "5 Linear", "4 more"]));
    expect(labels(view)).not.toContain("6 Linear");
  });

  it("opens folds and loads 'more' rows", async () => {
    const kids = Array.from({ length: 5 }, (_, i) => ({ name: String(i), cls: "DecoderLayer" }));
    const root: FakeNode = { name: "", cls: "M", kids: [{ name: "layers", cls: "ModuleList", kids }] };
    const { view, kernel } = setup(root, 2);
    const state = firstState(root);
    (state.pages as Record<string, any>)["layers"] = {
      items: [{ fold: 5, parent: "layers", start: 0, cls: "DecoderLayer", first: "layers.0", last: "layers.4" }],
      total: 1,
      offset: 0,
    };
    await view.setState(state);
    items(view)[1].click(); // layers: opens from the preloaded page
    await flush();
    expect(labels(view)).toContain("0-4 ×5 DecoderLayer");
    const fold = items(view).find((r) => r.getAttribute("aria-label") === "0-4 ×5 DecoderLayer")!;
    fold.click();
    await flush();
    expect(kernel.calls.at(-1)).toMatchObject({ kind: "children", path: "layers", offset: 0, limit: 5, unfold: true });
    expect(labels(view)).toEqual(expect.arrayContaining(["0 DecoderLayer", "1 DecoderLayer", "3 more"]));
    items(view).find((r) => r.getAttribute("aria-label") === "3 more")!.click();
    await flush();
    expect(labels(view)).toEqual(expect.arrayContaining(["2 DecoderLayer", "3 DecoderLayer", "1 more"]));
  });

  it("filters in the kernel, shows the count and clears back to the tree", async () => {
    const { view, kernel } = setup();
    await view.setState(firstState(MODEL));
    await view.setFilter("conv");
    expect(kernel.calls.at(-1)).toMatchObject({ kind: "filter", query: "conv", regex: false });
    expect(labels(view)).toEqual(["conv1 Conv2d", "conv1 Conv2d", "conv1 Conv2d"]);
    expect(view.el.querySelector(".tx-count")?.textContent).toBe("3 matches");
    await view.setFilter("");
    expect(labels(view)[0]).toBe("(model) Net");
  });

  it("reveals a deep path by expanding its ancestors", async () => {
    const { view } = setup();
    await view.setState(firstState(MODEL));
    await view.reveal("layer1.1.conv1");
    expect(view.isExpanded("layer1")).toBe(true);
    expect(view.isExpanded("layer1.1")).toBe(true);
    const sel = items(view).find((r) => r.getAttribute("aria-selected") === "true");
    expect(sel?.getAttribute("aria-label")).toBe("conv1 Conv2d");
  });

  it("reports a failed children request without sticking", async () => {
    const { view, onError } = setup();
    const state = firstState(MODEL);
    state.pages[""].items.push({ path: "ghost", name: "ghost", cls: "X", nkids: 2, params: 0 });
    await view.setState(state);
    items(view).at(-1)!.click();
    await flush();
    expect(onError).toHaveBeenCalledWith(expect.stringContaining("ghost"));
    expect(view.isExpanded("ghost")).toBe(false);
    expect(labels(view)).not.toContain("loading");
  });
});

describe("TreeView after a patch", () => {
  it("keeps open nodes and folds open when a new tree state arrives", async () => {
    const kids = Array.from({ length: 4 }, (_, i) => ({ name: String(i), cls: "Block", kids: [{ name: "fc", cls: "Linear" }] }));
    const root: FakeNode = { name: "", cls: "M", kids: [{ name: "layers", cls: "ModuleList", kids }] };
    const { view } = setup(root);
    const state = () => {
      const s = firstState(root);
      (s.pages as Record<string, any>)["layers"] = {
        items: [{ fold: 4, parent: "layers", start: 0, cls: "Block", first: "layers.0", last: "layers.3" }],
        total: 1,
        offset: 0,
      };
      return s;
    };
    await view.setState(state());
    await view.expand("layers");
    items(view).find((r) => r.getAttribute("aria-label") === "0-3 ×4 Block")!.click();
    await flush();
    await view.expand("layers.2");
    expect(labels(view)).toContain("fc Linear");
    await view.setState({ ...state(), rev: 2 });
    await flush();
    expect(view.isExpanded("fold:layers:0")).toBe(true);
    expect(labels(view)).toEqual(expect.arrayContaining(["2 Block", "fc Linear"]));
  });

  it("an alias row keeps its own name and the focus when the kernel selects the canonical path", async () => {
    const { view, onSelect } = setup();
    const row = (path: string, extra: Record<string, unknown> = {}) => ({ path, name: path, cls: "Linear", nkids: 0, params: 6, ...extra });
    await view.setState({
      rev: 1,
      root: { path: "", name: "", cls: "Sequential", nkids: 3, params: 6 },
      pages: { "": { items: [row("0", { marks: ["alias"] }), row("1", { alias_of: "0", marks: ["alias"] }), row("2")], total: 3, offset: 0 } },
    });
    expect(labels(view)).toEqual(["(model) Sequential", "0 Linear", "1 Linear", "2 Linear"]);
    view.select("0");
    const key = (k: string) => view.tree.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
    key("ArrowDown");
    expect(onSelect).toHaveBeenLastCalledWith("1");
    await view.reveal("0"); // what the kernel's answer (selected = canonical "0") does
    expect(view.focus).toBe(2);
    key("ArrowDown");
    expect(onSelect).toHaveBeenLastCalledWith("2");
    expect(view.focus).toBe(3);
  });

  it("keeps rows opened by hand through two tree states in a row (a patch's, then its probe's)", async () => {
    const { view } = setup();
    await view.setState(firstState(MODEL));
    await view.expand("layer1");
    await view.expand("layer1.0");
    // Apply sends the patch's state, then the background probe's, before the first has loaded.
    const a = view.setState(firstState(MODEL, 2));
    const b = view.setState(firstState(MODEL, 3));
    await Promise.all([a, b]);
    await flush();
    expect(view.isExpanded("layer1") && view.isExpanded("layer1.0")).toBe(true);
    expect(labels(view)).toContain("conv1 Conv2d");
    expect(labels(view).filter((l) => l === "0 BasicBlock")).toHaveLength(1);
  });
});
