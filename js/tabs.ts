// The explorer's tab strip and panels (ARIA tabs): one panel per tab, one shown, the arrow keys
// move between tabs. The panels share one scroller: a long Probe table's offset must not carry
// over to Overview.
import { h, uid } from "./dom";

export class TabBar<T extends string> {
  readonly list: HTMLElement;
  readonly box: HTMLElement;
  active: T;
  private readonly tabs = new Map<T, HTMLButtonElement>();
  private readonly panels = new Map<T, HTMLElement>();

  constructor(
    private readonly names: readonly T[],
    content: (name: T) => HTMLElement,
    private readonly shown: (name: T) => Promise<void>,
    first: T,
  ) {
    this.active = first;
    this.list = h("div", { role: "tablist", class: "tx-tabs", "aria-label": "Module details" });
    this.box = h("div", { class: "tx-panels" });
    for (const name of names) {
      const panelId = uid("panel");
      const tab = h("button", {
        type: "button",
        role: "tab",
        "aria-controls": panelId,
        "aria-selected": String(name === first),
        tabindex: name === first ? 0 : -1,
      }, name);
      const panel = h("div", { role: "tabpanel", id: panelId, class: "tx-panel", "aria-label": name, hidden: name !== first }, content(name));
      tab.addEventListener("click", () => void this.open(name));
      tab.addEventListener("keydown", (e) => {
        const i = names.indexOf(name);
        const n = names.length;
        const next = e.key === "ArrowRight" ? names[(i + 1) % n] : e.key === "ArrowLeft" ? names[(i + n - 1) % n] : null;
        if (next) {
          e.preventDefault();
          void this.open(next).then(() => this.tabs.get(next)?.focus());
        }
      });
      this.tabs.set(name, tab);
      this.panels.set(name, panel);
      this.list.appendChild(tab);
      this.box.appendChild(panel);
    }
  }

  async open(name: T): Promise<void> {
    if (name !== this.active) this.box.scrollTop = 0;
    this.active = name;
    for (const t of this.names) {
      const on = t === name;
      this.tabs.get(t)?.setAttribute("aria-selected", String(on));
      this.tabs.get(t)?.setAttribute("tabindex", on ? "0" : "-1");
      const p = this.panels.get(t);
      if (p) p.hidden = !on;
    }
    await this.shown(name);
  }
}
