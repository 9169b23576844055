// Memory of the selected subtree in a fake forward or training step (tx.memory on the explorer's
// example inputs): a stacked bar of weights, gradients, optimizer state and saved activations,
// and whether the whole model's peak fits on the devices present or on a size the person types.
// One answer first and large (the model's peak; a submodule's own tensors), the rest labelled.
import { clear, formatBytes, h, uid } from "../dom";
import type { MemoryReply } from "../protocol";
import type { Ctx, Pane } from "./context";

export const OPTIMIZERS = [
  ["adamw", "AdamW"],
  ["adam", "Adam"],
  ["sgd", "SGD with momentum"],
  ["none", "none"],
] as const;
type Optimizer = (typeof OPTIMIZERS)[number][0];

/** The bar's parts: reply field, label, CSS class (the colour). */
export const PARTS = [
  ["params", "weights", "tx-mem-w"],
  ["grads", "gradients", "tx-mem-g"],
  ["optimizer_state", "optimizer", "tx-mem-o"],
  ["activations", "activations", "tx-mem-a"],
] as const;

const UNITS: Record<string, number> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
  k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40,
};

/** "24 GB" (10^9), "80GiB" and "16 G" (2^30), "512 mb" -> bytes; throws a message saying how to
 * write a size when the text is not one. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)\s*$/i.exec(text);
  const unit = m ? (m[2] || "b").toLowerCase() : "";
  if (!m || !(unit in UNITS)) {
    const why = m ? `unknown unit "${m[2]}"` : "not a number followed by a unit";
    throw new Error(`"${text.trim()}" is not a size (${why}): type e.g. 24 GB, 80 GiB or 512 MB`);
  }
  const bytes = Number(m[1]) * UNITS[unit];
  if (!(bytes > 0)) throw new Error(`"${text.trim()}" is not a size: it must be more than 0`);
  return Math.round(bytes);
}

/** "fits (12% used)" / "does not fit (needs 2.1x)" for a peak on a device of `capacity` bytes. */
export function fitText(peak: number, capacity: number): [boolean, string] {
  const used = (100 * peak) / capacity;
  if (peak <= capacity) return [true, `fits (${used < 1 ? "<1" : Math.round(used)}% used)`];
  return [false, `does not fit (needs ${(peak / capacity).toFixed(1)}×)`];
}

/** The one answer to "how much memory is this", first and large: the model's peak for the model
 * (what a device needs), a submodule's own tensors for a submodule (the rest is labelled below). */
export function answer(r: MemoryReply, total: number): HTMLElement {
  const step = r.training ? `a training step (${r.optimizer === "none" ? "no optimizer" : r.optimizer})` : "a forward";
  if (r.path === "") {
    return h("p", { class: "tx-mem-answer" }, h("strong", { class: "tx-mem-big" }, formatBytes(r.model_peak)), ` model peak in ${step}: what a device needs ("Fits on" below compares it)`);
  }
  const own = r.training ? "weights, gradients, optimizer state and saved activations, each at its largest" : "its weights and buffers";
  return h("p", { class: "tx-mem-answer" }, h("strong", { class: "tx-mem-big" }, formatBytes(total)), ` held by ${r.path} in ${step}: ${own}`);
}

export class MemoryPane implements Pane {
  readonly el = h("div", { class: "tx-memory" });
  private readonly training: HTMLInputElement;
  private readonly optimizer: HTMLSelectElement;
  private readonly sizeInput: HTMLInputElement;
  private readonly sizeOut = h("div", { class: "tx-mem-size", "aria-live": "polite" });
  private readonly body = h("div", { class: "tx-mem-body" });
  private reply: MemoryReply | null = null;
  private seq = 0;

  constructor(private readonly ctx: Ctx) {
    this.training = h("input", { type: "checkbox", role: "switch", id: uid("mem-train") });
    this.optimizer = h("select", { "aria-label": "optimizer" });
    for (const [value, label] of OPTIMIZERS) this.optimizer.appendChild(h("option", { value }, label));
    this.sizeInput = h("input", { type: "text", "aria-label": "device size", placeholder: "e.g. 24 GB", size: 10 });
    this.training.addEventListener("change", () => void this.show());
    this.optimizer.addEventListener("change", () => void this.show());
    this.sizeInput.addEventListener("input", () => this.showSize());
    const controls = h(
      "div",
      { class: "tx-mem-controls" },
      h("label", { for: this.training.id }, this.training, " training step"),
      h("label", {}, "optimizer ", this.optimizer),
    );
    const size = h("div", { class: "tx-mem-sizerow" }, h("label", {}, "fits on a device of ", this.sizeInput), this.sizeOut);
    this.el.append(controls, this.body, size);
  }

  async show(): Promise<void> {
    this.optimizer.disabled = !this.training.checked;
    if (this.ctx.readonly) {
      this.render(null, "Memory needs a kernel: this is a read-only snapshot.");
      return;
    }
    const seq = ++this.seq;
    const path = String(this.ctx.model.get("selected") ?? "");
    const training = this.training.checked;
    const optimizer = this.optimizer.value as Optimizer;
    this.body.setAttribute("aria-busy", "true");
    const reply = await this.ctx.run("measuring memory", () =>
      this.ctx.rpc.call({ kind: "memory", path, training, optimizer }),
    );
    if (seq !== this.seq) return; // a newer request (other module or options) answers instead
    this.body.removeAttribute("aria-busy");
    this.render(reply ?? null, reply ? "" : "No estimate: see the message above.");
  }

  private render(r: MemoryReply | null, message: string): void {
    this.reply = r;
    clear(this.body);
    if (!r) {
      this.body.appendChild(h("p", { class: "tx-muted" }, message));
      this.showSize();
      return;
    }
    const total = PARTS.reduce((s, [k]) => s + r[k], 0);
    const what = r.training ? `training step, ${r.optimizer === "none" ? "no optimizer" : r.optimizer}` : "inference (forward)";
    const name = r.path === "" ? "(model)" : r.path;
    this.body.appendChild(h("h4", {}, `${name}: ${what}`));
    this.body.appendChild(answer(r, total));
    const bar = h("div", { class: "tx-membar", role: "img" });
    const legend = h("ul", { class: "tx-memlegend" });
    for (const [key, label, cls] of PARTS) {
      const v = r[key];
      if (v > 0 && total > 0) {
        const seg = h("span", { class: `tx-memseg ${cls}`, title: `${label}: ${formatBytes(v)}` });
        seg.style.width = `${(100 * v) / total}%`;
        bar.appendChild(seg);
      }
      // Inference keeps no gradients, optimizer state or saved activations: not listed as 0 B.
      if (r.training || key === "params" || v > 0) legend.appendChild(h("li", {}, h("span", { class: `tx-swatch ${cls}` }), `${label} ${formatBytes(v)}`));
    }
    const parts = PARTS.map(([key, label]) => `${label} ${formatBytes(r[key])}`).join(", ");
    bar.setAttribute("aria-label", `bytes of ${r.path || "the model"}: ${parts}`);
    const dl = h("dl", { class: "tx-dl tx-mem-context" });
    const row = (k: string, v: string) => dl.append(h("dt", {}, k), h("dd", {}, v));
    row("weights' dtype", r.dtypes.length ? r.dtypes.join(", ") : "— (no weights)");
    row("measured on", `${r.device} (fake tensors: nothing allocated)`);
    const step = r.training ? "step" : "forward";
    if (r.path === "") {
      const when = r.training ? "each part at its largest; they are never all held at once" : "held at once";
      row("its tensors in all", `${formatBytes(total)} (${when})`);
    } else {
      // Not this block's: what the whole model held around it, and the model's own peak.
      if (r.peak) row("the model while it ran", `${formatBytes(r.peak)} live in all while its forward ran (the whole model's tensors, not ${r.path}'s alone)`);
      row("model peak", `${formatBytes(r.model_peak)}: what a device needs for the whole model's ${step} ("Fits on" compares it)`);
    }
    this.body.append(bar, legend, dl);
    if (r.note) this.body.appendChild(h("p", { class: "tx-muted" }, r.note));
    const fits = h("ul", { class: "tx-memfits", "aria-label": "fits on" });
    for (const d of r.devices) {
      const [ok, text] = fitText(r.model_peak, d.bytes);
      fits.appendChild(h("li", { class: ok ? "tx-fit" : "tx-nofit" }, `${d.name} ${formatBytes(d.bytes)}: ${text}`));
    }
    this.body.append(h("h4", {}, "Fits on (the whole model's peak)"), fits);
    this.showSize();
  }

  private showSize(): void {
    const text = this.sizeInput.value;
    this.sizeOut.classList.remove("tx-bad", "tx-fit", "tx-nofit");
    if (!text.trim()) {
      this.sizeOut.textContent = "";
      return;
    }
    try {
      const bytes = parseSize(text);
      if (!this.reply) {
        this.sizeOut.textContent = `${formatBytes(bytes)}: no estimate to compare with yet`;
        return;
      }
      const [ok, verdict] = fitText(this.reply.model_peak, bytes);
      this.sizeOut.classList.add(ok ? "tx-fit" : "tx-nofit");
      this.sizeOut.textContent = `${formatBytes(bytes)}: ${verdict}`;
    } catch (e) {
      this.sizeOut.classList.add("tx-bad");
      this.sizeOut.textContent = e instanceof Error ? e.message : String(e);
    }
  }
}
