// Entry point loaded by anywidget: lays out the tree and the tabbed panes, wires them to the synced
// traitlets (state) and to the kernel's "rpc" command (actions). Mirrors src/torchxray/widget.py.
import type { RenderProps } from "@anywidget/types";
import { clear, h } from "./dom";
import { hideStandIn, whenAttached } from "./host";
import { containKeys } from "./keys";
import { CompilePane } from "./panes/compile";
import { ExportPane } from "./panes/export";
import { FormPane } from "./panes/form";
import { GraphPane } from "./panes/graph";
import { DiffPane } from "./panes/diff";
import { HistoryPane } from "./panes/history";
import { MemoryPane } from "./panes/memory";
import { MroPane } from "./panes/mro";
import { OverviewPane } from "./panes/overview";
import { ProbePane } from "./panes/probe";
import { RanksPane, showRankBadges } from "./panes/ranks";
import { offersReal, realProbeButton } from "./panes/real_probe";
import { SourcePane } from "./panes/source";
import { TrainingPane, trainingBadges, trainingMoment } from "./panes/training";
import { messageOf, type Ctx, type Pane } from "./panes/context";
import type { Channel, HistoryState, State } from "./protocol";
import { Rpc, SLOW_KINDS } from "./protocol";
import { savedModel } from "./saved_model";
import { type Assets, SnapshotRpc } from "./snapshot";
import { messageInvoke } from "./transport";
import { TreeView } from "./tree";
import { driftFigures, isTrainFigure, TreeColor } from "./tree_color";
import { TreeSelect } from "./tree_select";
import { TabBar } from "./tabs";

const READ_ONLY_NOTE = "read-only snapshot: no kernel, actions disabled";
const PING_TIMEOUT = 8000;

export const TABS = ["Overview", "Source", "Form", "MRO", "Graph", "Probe", "History", "Diff", "Memory", "Training", "Compile", "Ranks", "Export"] as const;
type Tab = (typeof TABS)[number];

export interface Explorer {
  el: HTMLElement;
  tree: TreeView;
  panes: Record<Tab, Pane>;
  openTab(tab: Tab): Promise<void>;
  dispose(): void;
}

export function createExplorer(
  { model, el, experimental }: Pick<RenderProps<State>, "model" | "el" | "experimental">,
  assets: Assets = {},
): Explorer {
  const snapshot = model.get("snapshot");
  // Hosts without anywidget's invoke (marimo) still relay custom messages: Rpc falls back to them.
  let readonly = Boolean(model.get("readonly")) || (!experimental?.invoke && typeof model.send !== "function");
  const kernel = readonly ? null : new Rpc(experimental?.invoke ?? null, messageInvoke(model));
  let rpc: Channel = kernel ?? new SnapshotRpc(snapshot, assets);
  const disposers: (() => void)[] = [];
  const on = (event: string, fn: () => void) => {
    model.on(event, fn);
    disposers.push(() => model.off(event as "msg:custom", fn));
  };

  const status = h("div", { role: "status", class: "tx-status", "aria-live": "polite" });
  const busyEl = h("span", { class: "tx-busy", "aria-hidden": "true" });
  const alertText = h("span");
  const dismiss = h("button", { type: "button", class: "tx-link" }, "Dismiss");
  // Undo is where a person looks after breaking the model: in the header, always, and next to a
  // failure status; Ctrl+Z / Ctrl+Shift+Z inside the widget do the same (keys.ts).
  const undoBtn = h("button", { type: "button", title: "Undo the last patch (Ctrl+Z)" }, "Undo");
  const redoBtn = h("button", { type: "button", title: "Redo the undone patch (Ctrl+Shift+Z)" }, "Redo");
  const buttons = h("span", { class: "tx-buttons" }, undoBtn, redoBtn);
  const undoFailed = h("button", { type: "button", class: "tx-link tx-undofailed", hidden: true }, "Undo last patch");
  const alert = h("div", { role: "alert", class: "tx-alert", hidden: true }, alertText, dismiss);
  // A probe runs in the kernel's background thread: this stops it at its next layer.
  const cancelBtn = h(
    "button",
    { type: "button", class: "tx-cancel", hidden: true, title: "Stop the probe at its next layer; the model stays as it is" },
    "Cancel probe",
  );
  cancelBtn.addEventListener("click", () => {
    cancelBtn.disabled = true;
    // Said at once: putting a big model back takes a moment after the probe stops.
    status.textContent = "cancelling the probe: putting the model back…";
    rpc.call({ kind: "cancel" }).catch((e: unknown) => showError(messageOf(e)));
  });
  // Lumino (JupyterLab) would otherwise take arrows/Enter in the tree for notebook commands.
  const root = h("div", { class: "tx-root", "data-lm-suppress-shortcuts": "true" });
  let localBusy = 0;

  // A failure is often deep inside collapsed rows: its status leads there.
  status.addEventListener("click", () => {
    const p = model.get("probe_summary");
    if (p?.ok !== false || !p.error) return;
    ctx.select(p.error.path);
    void tree.reveal(p.error.path); // also when it is selected already
  });
  const showError = (message: string) => {
    alertText.textContent = message;
    alert.hidden = !message;
  };
  dismiss.addEventListener("click", () => showError(""));

  const syncBusy = () => {
    const kernel = model.get("busy");
    const busy = localBusy > 0 || Boolean(kernel);
    root.setAttribute("aria-busy", String(busy));
    root.classList.toggle("tx-isbusy", busy);
    busyEl.textContent = busy ? `working${kernel ? `: ${kernel}` : ""}…` : "";
    cancelBtn.hidden = readonly || kernel !== "probe";
    if (cancelBtn.hidden) cancelBtn.disabled = false;
    // The buttons take no pointer events while busy (styles.css): their box says why instead.
    buttons.title = busy ? `Apply, Undo and Redo wait until the ${kernel || "request"} is done` : "";
  };

  const ctx: Ctx = {
    get rpc() {
      return rpc;
    },
    model,
    get readonly() {
      return readonly;
    },
    async run(label, fn) {
      localBusy += 1;
      syncBusy();
      if (SLOW_KINDS.has(label)) {
        status.textContent = `probe running after ${label}…`;
      }
      try {
        const r = await fn();
        showError("");
        return r;
      } catch (e) {
        showError(messageOf(e));
        return undefined;
      } finally {
        localBusy -= 1;
        syncBusy();
        syncStatus();
      }
    },
    error: showError,
    select: (path) => {
      clearTimeout(selectTimer); // a row clicked just before must not win over this selection
      void selectPath(path);
    },
    openSource: (path, cls, line) => {
      (panes.Source as SourcePane).at({ path, cls, line });
      void openTab("Source");
    },
  };

  // A fake probe stopped at a data-dependent op: the real probe is offered next to the failure.
  const runReal = realProbeButton(ctx, "tx-runreal tx-header-real", "Probe with real tensors (the mode stays real)");
  const history = () => model.get("history") as HistoryState | undefined;
  // While a patch or probe runs, a second Ctrl+Z would queue behind it: ignored, as the buttons are.
  const idle = () => !readonly && !root.classList.contains("tx-isbusy");
  const undo = () => {
    if (idle() && history()?.can_undo) void ctx.run("undo", () => rpc.call({ kind: "undo" }));
  };
  const redo = () => {
    if (idle() && history()?.can_redo) void ctx.run("redo", () => rpc.call({ kind: "redo" }));
  };
  undoBtn.addEventListener("click", undo);
  undoFailed.addEventListener("click", undo);
  redoBtn.addEventListener("click", redo);
  const syncHistory = () => {
    const s = history();
    undoBtn.disabled = readonly || !s?.can_undo;
    redoBtn.disabled = readonly || !s?.can_redo;
    undoFailed.hidden = undoBtn.disabled || model.get("probe_summary")?.ok !== false;
  };

  const source = {
    children: (parent: string, offset: number, limit: number, unfold: boolean) => rpc.call({ kind: "children", path: parent, offset, limit, unfold }),
    filter: (query: string, regex: boolean, names: boolean) => rpc.call({ kind: "filter", query, regex, names }),
    reveal: (path: string) => rpc.call({ kind: "reveal", path }),
  };

  let selectTimer: ReturnType<typeof setTimeout> | undefined;
  const selectPath = async (path: string) => {
    if (readonly) {
      model.set("selected", path);
      const o = (snapshot?.overview as Record<string, unknown> | undefined)?.[path];
      model.set("overview", (o ?? {}) as State["overview"]);
      refreshPane();
      return;
    }
    try {
      await rpc.call({ kind: "select", path });
    } catch (e) {
      showError(messageOf(e));
    }
  };
  const tree = new TreeView(
    source,
    (path) => {
      // Optimistic: panes follow the click at once; the kernel confirms (and sends the overview).
      if (!readonly) model.set("selected", path);
      clearTimeout(selectTimer);
      selectTimer = setTimeout(() => void selectPath(path), 80);
    },
    showError,
  );
  const picker = new TreeSelect(tree, ctx);
  // Rows coloured by a figure (the Memory tab's, or FLOPs, time): values asked for as rows are drawn.
  const color = new TreeColor(
    (figure, paths) =>
      figure === "drift"
        ? Promise.resolve(driftFigures(model.get("export_state") ?? {}, paths))
        : isTrainFigure(figure)
          ? rpc.call({ kind: "train_figures", figure, paths })
          : rpc.call({ kind: "figures", figure, paths }),
    () => tree.render(),
    showError,
  );
  tree.el.insertBefore(color.el, tree.el.children[1] ?? null);
  tree.decorate = (row, item, index) => {
    picker.decorate(row, item, index);
    color.paint(row, item);
  };

  const panes: Record<Tab, Pane> = {
    Overview: new OverviewPane(ctx),
    Source: new SourcePane(ctx),
    Form: new FormPane(ctx),
    MRO: new MroPane(ctx),
    Graph: new GraphPane(ctx),
    Probe: new ProbePane(ctx),
    History: new HistoryPane(ctx),
    Diff: new DiffPane(ctx, (badges) => picker.setBadges("diff", badges)),
    Memory: new MemoryPane(ctx),
    Training: new TrainingPane(ctx),
    Compile: new CompilePane(ctx, (fold) => tree.filter.setFold(fold)),
    Ranks: new RanksPane(ctx),
    Export: new ExportPane(
      ctx,
      (badges) => picker.setBadges("export", badges),
      (figure) => {
        color.select.value = figure;
        color.select.dispatchEvent(new Event("change"));
      },
    ),
  };
  const bar = new TabBar(TABS, (name) => panes[name].el, async (name) => panes[name].show(), "Overview");
  const openTab = (name: Tab): Promise<void> => bar.open(name);
  const refreshPane = () => void panes[bar.active].show();

  function syncStatus(): void {
    if (localBusy > 0) return;
    const p = model.get("probe_summary");
    // In a kernel the tree follows the view (_view/schedule.py): until then the kernel reads the
    // model. A big model's outline comes first (rows without counts) while it reads the tensors.
    const state = model.get("tree_state");
    status.textContent = (state?.root && !state.outline) || readonly ? (p?.status ?? "") : "reading the model…";
    status.classList.toggle("tx-bad", p?.ok === false && !p.stale);
    status.title = p?.ok === false ? "show the module that failed in the tree" : "";
    // No report (probing, cancelled, skipped, no inputs): neither green nor red.
    status.classList.toggle("tx-none", p?.ok === null || p?.ok === undefined || Boolean(p.stale));
    root.classList.toggle("tx-failed", p?.ok === false);
    runReal.hidden = !offersReal(p, readonly);
  }

  const title = h("span", { class: "tx-title" }, "torchxray");
  const note = h("span", { class: "tx-note" }, readonly ? READ_ONLY_NOTE : "");
  root.append(
    h("div", { class: "tx-header" }, title, status, runReal, picker.probeNote, undoFailed, busyEl, cancelBtn, note, buttons),
    alert,
    h("div", { class: "tx-main" }, tree.el, h("div", { class: "tx-side" }, bar.list, bar.box)),
  );
  clear(el);
  el.appendChild(root);
  // The read-only stand-in displayed after the widget is for a notebook without its kernel.
  if (!readonly) whenAttached(el, () => hideStandIn(el));

  // In a kernel the tree comes after the view (_view/schedule.py): the first one reveals the
  // selection made before the view was shown (e.g. ex.select(...) in the same cell).
  let shown = false;
  const showTree = (refresh: boolean): void => {
    const state = model.get("tree_state");
    if (!state?.root) return;
    const first = !shown;
    shown = true;
    void tree.setState(state).then(() => {
      const sel = model.get("selected");
      if (first && sel) void tree.reveal(sel);
      if (refresh) refreshPane();
      picker.scheduleHealth();
    });
  };
  // A state's tab redraws when it is open; `sync` draws what the state puts elsewhere.
  const follow = (tab: Tab, sync?: () => void) => () => { sync?.(); if (bar.active === tab) refreshPane(); };
  on("change:tree_state", () => color.reset());
  on("change:tree_state", () => picker.treeChanged());
  on("change:tree_state", syncStatus);
  on("change:tree_state", () => showTree(true));
  on("change:selected", () => {
    for (const name of TABS) panes[name].selectionChanged?.();
    void tree.reveal(model.get("selected"));
    if (bar.active !== "Overview") refreshPane();
  });
  on("change:overview", follow("Overview"));
  on("change:probe_summary", () => {
    if (color.figure === "flops" || color.figure === "time") color.reset();
    picker.scheduleHealth();
    syncStatus();
    syncHistory();
    if (bar.active === "Probe" || bar.active === "Overview") refreshPane();
  });
  on("change:history", follow("History", syncHistory));
  on("change:training", follow("Training", syncTraining));
  // The Ranks tab's plan: its rows' badges on the tree (none while the plan is stale).
  const syncRanks = () => showRankBadges(model.get("ranks_state") ?? {}, (source, b) => picker.setBadges(source, b));
  on("change:ranks_state", follow("Ranks", syncRanks));
  // The Export tab's check: one target's verdict on the rows; drift, a figure to colour by.
  const syncExport = () => {
    (panes.Export as ExportPane).syncBadges();
    if (color.figure === "drift") color.reset();
  };
  on("change:export_state", follow("Export", syncExport));
  on("change:busy", syncBusy);
  on("change:error", () => showError(model.get("error")));

  // The training lens's marks on the tree; a training colour is asked again as steps go by.
  let trainStep = "";
  function syncTraining(): void {
    const s = model.get("training") ?? {};
    picker.setBadges("train", trainingBadges(s));
    if (trainingMoment(s) && trainingMoment(s) !== trainStep && isTrainFigure(color.figure)) color.refresh();
    trainStep = trainingMoment(s);
  }

  showTree(false);
  syncTraining();
  syncRanks();
  syncExport();
  syncStatus();
  syncBusy();
  syncHistory();
  disposers.push(containKeys(root, { undo, redo }));
  if (model.get("error")) showError(model.get("error"));
  void panes.Overview.show();

  // The first request tells the kernel the view has drawn: its first probe starts then (widget.py).
  // A notebook saved with widget state and reopened without its kernel: nothing answers. If the
  // kernel left a snapshot (ex.save_snapshot()), browse that read-only instead.
  const saved = (snapshot as { nodes?: unknown[] })?.nodes?.length;
  if (kernel) {
    // Which way the requests went (invoke or custom messages), for a person debugging a host.
    rpc.call({ kind: "ping" }, PING_TIMEOUT).then(() => root.setAttribute("data-transport", kernel.transport), () => {
      if (!saved) return;
      readonly = true;
      rpc = new SnapshotRpc(snapshot, assets);
      note.textContent = READ_ONLY_NOTE;
      syncHistory();
      refreshPane();
    });
  }

  return {
    el: root,
    tree,
    panes,
    openTab,
    dispose: () => {
      clearTimeout(selectTimer);
      picker.dispose();
      for (const d of disposers) d();
    },
  };
}

/** A read-only Explorer with no kernel (ex.to_html()): the synced state is given once. */
export function mountSnapshot(el: HTMLElement, state: State, assets: Assets = {}): Explorer {
  return createExplorer({ model: savedModel(state) as never, el, experimental: null as never }, assets);
}

export default {
  render(props: RenderProps<State>) {
    const ex = createExplorer(props);
    return () => ex.dispose();
  },
};
