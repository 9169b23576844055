// The patch log: entries, Undo / Redo, and the replayable code (PatchLog.to_code) to copy.
import { clear, h } from "../dom";
import type { HistoryState } from "../protocol";
import type { Ctx, Pane } from "./context";

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Clipboard API is refused without focus/permission (e.g. some iframes): fall back to a
    // selected textarea and execCommand, still text only.
    const ta = h("textarea", { class: "tx-offscreen", "aria-hidden": "true" });
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    ta.remove();
    return ok;
  }
}

export class HistoryPane implements Pane {
  readonly el = h("div", { class: "tx-historypane" });
  constructor(private readonly ctx: Ctx) {}

  show(): void {
    const s = this.ctx.model.get("history") as HistoryState;
    clear(this.el);
    const undo = h("button", { type: "button" }, "Undo");
    const redo = h("button", { type: "button" }, "Redo");
    const copy = h("button", { type: "button" }, "Copy code");
    const note = h("span", { class: "tx-muted", "aria-live": "polite" });
    undo.disabled = !s?.can_undo || this.ctx.readonly;
    redo.disabled = !s?.can_redo || this.ctx.readonly;
    undo.addEventListener("click", () => void this.ctx.run("undo", () => this.ctx.rpc.call({ kind: "undo" })));
    redo.addEventListener("click", () => void this.ctx.run("redo", () => this.ctx.rpc.call({ kind: "redo" })));
    copy.addEventListener("click", async () => {
      note.textContent = (await copyText(s?.code ?? "")) ? "copied" : "copy failed: select the code below";
    });
    this.el.appendChild(h("div", { class: "tx-buttons" }, undo, redo, copy, note));
    if (s?.note) this.el.appendChild(h("p", { class: "tx-note" }, s.note));
    const entries = s?.entries ?? [];
    if (!entries.length) {
      const text = s?.can_redo
        ? "No applied patches: Redo puts the undone one back."
        : "No patches yet. Edit or replace a module in the Form tab.";
      this.el.appendChild(h("p", { class: "tx-muted" }, text));
    } else {
      const ol = h("ol", { class: "tx-log" });
      for (const e of entries) {
        const changes = Object.entries(e.changes ?? {}).map(([k, v]) => `${k}=${v}`).join(", ");
        const what = e.old_cls === e.new_cls ? e.new_cls : `${e.old_cls} → ${e.new_cls}`;
        // Numbered by the entry's id, as the code's "# N." comments are (not by list position).
        ol.appendChild(h("li", { value: String(e.id) }, h("strong", {}, e.op), ` ${e.paths.join(", ")}: ${what}${changes ? ` (${changes})` : ""}`));
      }
      this.el.appendChild(ol);
    }
    this.el.append(h("h4", {}, "Replayable code"), h("pre", { class: "tx-pre tx-code" }, s?.code || "# no patches"));
  }
}
