// Overview of the selected module: class, sizes, devices, hooks, extra_repr and its last probe record.
import { breakablePath, clear, formatBytes, formatCount, h } from "../dom";
import type { SiteRow } from "../protocol";
import type { Ctx, Pane } from "./context";
import { statsSection } from "./stats";

type O = Record<string, unknown>;

function text(v: unknown): string {
  if (v === null || v === undefined || v === "") return "—";
  if (Array.isArray(v)) return v.length ? v.map(text).join(", ") : "—";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** Bytes in total, and per rank where one rank holds less (a DTensor's shard). */
/** Logical bytes (shape times dtype) and, where they differ, what this process stores: a
 * DTensor's local shard ("per rank"), a quantized weight's inner tensors ("stored"). */
export function sizeText(total: number, local: unknown, placement?: unknown): string {
  if (typeof local !== "number" || local === total) return formatBytes(total);
  if (typeof placement === "string" && placement.includes("DTensor")) {
    return `${formatBytes(total)} in total, ${formatBytes(local)} per rank`;
  }
  return `${formatBytes(total)} logical, ${formatBytes(local)} stored`;
}

export class OverviewPane implements Pane {
  readonly el = h("div", { class: "tx-overview" });
  constructor(private readonly ctx: Ctx) {}

  show(): void {
    const o = this.ctx.model.get("overview") as O;
    clear(this.el);
    if (!o || o.path === undefined) {
      // No tree yet, or only its outline: in a kernel they follow the view (widget.py DEFERRED).
      const tree = this.ctx.model.get("tree_state");
      const reading = !tree?.root || tree.outline === true;
      this.el.appendChild(h("p", { class: "tx-muted" }, reading ? "reading the model…" : "Select a module in the tree."));
      return;
    }
    const rows: [string, string][] = [
      ["path", o.path === "" ? "(model)" : String(o.path)],
      ["class", text(o.cls)],
      ["qualname", text(o.qualname)],
      ["parameters", `${formatCount(Number(o.params_total))} (${Number(o.params_total).toLocaleString()}; own ${Number(o.params_own).toLocaleString()})`],
      ["trainable", Number(o.trainable_total).toLocaleString()],
      ["size", sizeText(Number(o.bytes_total), o.bytes_local, o.placement)],
      ["placement", text(o.placement)],
      ["devices", text(o.devices)],
      ["dtypes", text(o.dtypes)],
      ["mode", o.training ? "train" : "eval"],
    ];
    const hooks = (o.hooks as { kind: string; name: string }[] | undefined) ?? [];
    if (hooks.length) rows.push(["hooks", hooks.map((x) => `${x.kind}: ${x.name}`).join(", ")]);
    if ((o.aliases as string[] | undefined)?.length) rows.push(["aliases", text(o.aliases)]);
    if (o.container) rows.push(["container", text(o.container)]);
    if ((o.parametrizations as string[] | undefined)?.length) rows.push(["parametrized", text(o.parametrizations)]);
    if (o.wraps !== null && o.wraps !== undefined) rows.push(["wraps", text(o.wraps)]);
    if (o.forward_patched) rows.push(["forward", "patched on this instance"]);
    const buffers = (o.buffers as { name: string; shape: string; dtype: string }[] | undefined) ?? [];
    if (buffers.length) rows.push(["buffers", buffers.map((b) => `${b.name} ${b.shape} ${b.dtype}`).join(", ")]);
    const probe = o.probe as O | null | undefined;
    if (!probe && o.not_called) rows.push(["calls", `not called: ${String(o.not_called)}`]);
    if (probe) {
      rows.push(["calls", text(probe.calls)]);
      rows.push(["input", text(probe.inputs)]);
      rows.push(["output", text(probe.outputs)]);
      if (probe.flops !== null && probe.flops !== undefined) rows.push(["FLOPs", formatCount(Number(probe.flops))]);
      if (probe.time_ms !== null && probe.time_ms !== undefined) rows.push(["time", `${Number(probe.time_ms).toFixed(3)} ms`]);
      if (probe.mem_peak !== null && probe.mem_peak !== undefined) rows.push(["memory peak", formatBytes(Number(probe.mem_peak))]);
    }
    const dl = h("dl", { class: "tx-dl" });
    // A path or qualname breaks after its dots only ("transformers.models.llama.modeling_llama.
    // LlamaModel"), other values between words (styles.css): never inside a name (issue 43).
    const dotted = new Set(["path", "qualname"]);
    for (const [k, v] of rows) dl.append(h("dt", {}, k), dotted.has(k) ? h("dd", { class: "tx-dotted" }, ...breakablePath(v)) : h("dd", {}, v));
    // forward's annotations against what the probe saw: a warning, not a failure.
    const contract = ((probe?.contract as string[] | undefined) ?? []).map((m) => h("div", {}, m));
    if (contract.length) dl.append(h("dt", {}, "contract"), h("dd", { class: "tx-warnrow", role: "note" }, ...contract));
    const sites = (o.sites as SiteRow[] | undefined) ?? [];
    if (sites.length) dl.append(h("dt", {}, "called from"), h("dd", { class: "tx-sites" }, ...sites.map((x) => this.site(x))));
    this.el.appendChild(dl);
    this.writes((o.writes as string[] | undefined) ?? []);
    if (o.extra_repr) {
      this.el.append(h("h4", {}, "extra_repr"), h("pre", { class: "tx-pre" }, String(o.extra_repr)));
    }
    this.el.appendChild(statsSection(this.ctx, String(o.path)));
  }

  /** "Its forward writes": what the last probe saw its forward write to itself (the root's: also
   * torch's flags, registries and files), one sentence each, as text. */
  private writes(lines: string[]): void {
    if (!lines.length) return;
    const kept = lines.every((l) => !l.endsWith("(not put back)"));
    const why = kept
      ? "torchxray put these back after the probe; torch.compile has to handle them too."
      : "torchxray put back what it could after the probe (not what says so); torch.compile has to handle them too.";
    this.el.append(
      h("section", { class: "tx-writes", "aria-label": "Its forward writes" },
        h("h4", {}, "Its forward writes"),
        h("p", { class: "tx-muted" }, why),
        h("ul", {}, ...lines.map((l) => h("li", {}, l))),
      ),
    );
  }

  /** "called from `ResNet.forward`, line 120: `x = self.layer1(x)`", the line a link to the
   * caller's source with that line marked; a reason where there is no line. */
  private site(x: SiteRow): HTMLElement {
    const times = x.count > 1 ? ` (${x.count} calls)` : "";
    if (!x.line || x.reason) return h("div", { class: "tx-site tx-muted" }, `${x.function || "?"}: ${x.reason}${times}`);
    const where = `${x.function}, line ${x.line}`;
    const open = this.ctx.openSource;
    const link =
      x.caller !== null && open
        ? h("button", { type: "button", class: "tx-link", title: `open ${x.file} at line ${x.line} in the Source tab` }, where)
        : h("span", { title: x.file }, where);
    if (link instanceof HTMLButtonElement && x.caller !== null && open) {
      const caller = x.caller;
      link.addEventListener("click", () => open(caller, x.cls, x.line));
    }
    return h("div", { class: "tx-site" }, link, ": ", h("code", {}, x.text), times);
  }
}
