// A laid-out graph (an SVG from @viz-js/viz) in a viewport of its own: shown at 100% (graphviz's
// 10 pt labels are 13 px there, readable), zoomed with the buttons, Ctrl+wheel or + / - / 0, panned
// by dragging its background or scrolling, and exported as SVG or PNG. Shared by the Graph and MRO
// tabs; what a click on a node does stays with them.
import { h } from "../dom";

const STEP = 1.25;
const MIN = 0.1;
const MAX = 4;
const PT = 4 / 3; // CSS px per pt: viz sizes its SVG in pt

/** `width`/`height` attribute ("123pt", "80px", "80") in CSS px. */
function px(value: string | null): number {
  const v = parseFloat(value ?? "");
  if (!Number.isFinite(v)) return 0;
  return value?.endsWith("pt") ? v * PT : v;
}

/** The SVG as a standalone file: namespaced, at its natural size, with the page's theme left out. */
export function svgText(svg: SVGSVGElement, width: number, height: number): string {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  copy.setAttribute("xmlns:xlink", "http://www.w3.org/1999/xlink");
  copy.setAttribute("width", `${Math.round(width)}px`);
  copy.setAttribute("height", `${Math.round(height)}px`);
  copy.removeAttribute("style");
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(copy)}`;
}

function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: name, hidden: true });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export class GraphView {
  readonly el: HTMLElement;
  readonly viewport = h("div", { class: "tx-gview-vp", tabindex: 0, role: "region", "aria-label": "graph (drag to pan, Ctrl+wheel to zoom)" });
  private readonly level = h("span", { class: "tx-gview-level", "aria-live": "polite" }, "100%");
  private readonly tools: HTMLButtonElement[];
  private svg: SVGSVGElement | null = null;
  private width = 0;
  private height = 0;
  scale = 1;

  /** `fileName`: the exports' name without extension, e.g. "torchxray-graph-layer1"; `fill`:
   * the viewport reaches down to the pane's bottom (the MRO tab keeps room for its lists). */
  constructor(
    private readonly fileName: () => string,
    private readonly fill = true,
  ) {
    const button = (text: string, title: string, fn: () => void) => {
      const b = h("button", { type: "button", title }, text);
      b.addEventListener("click", fn);
      return b;
    };
    this.tools = [
      button("−", "zoom out (-)", () => this.zoom(1 / STEP)),
      button("100%", "actual size: labels at their full size (0)", () => this.setScale(1)),
      button("+", "zoom in (+)", () => this.zoom(STEP)),
      button("Fit", "the whole graph in view", () => this.fit()),
      button("SVG", "download the graph as an SVG file", () => this.saveSvg()),
      button("PNG", "download the graph as a PNG image (2× its size)", () => void this.savePng()),
    ];
    const bar = h("div", { class: "tx-buttons tx-gview-bar", role: "toolbar", "aria-label": "graph view" }, ...this.tools, this.level);
    this.el = h("div", { class: "tx-gview" }, bar, this.viewport);
    this.enable(false);
    this.viewport.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    this.viewport.addEventListener("keydown", (e) => this.key(e));
    this.viewport.addEventListener("pointerdown", (e) => this.drag(e));
  }

  /** Shows a new graph at 100% (the old one's zoom is not carried over: another size). */
  show(svg: SVGSVGElement): void {
    this.clear();
    this.svg = svg;
    this.width = px(svg.getAttribute("width"));
    this.height = px(svg.getAttribute("height"));
    svg.style.maxWidth = "none";
    svg.style.maxHeight = "none";
    this.viewport.appendChild(svg);
    this.enable(true);
    if (this.fill) this.fillHeight();
    this.setScale(1);
  }

  /** The viewport down to the bottom of the pane (a standalone page is taller than a notebook's
   * 520 px widget), unless the person resized it. */
  private fillHeight(): void {
    const box = this.viewport.closest(".tx-panels")?.getBoundingClientRect();
    const top = this.viewport.getBoundingClientRect().top;
    const mine = this.viewport.dataset.sized;
    if (!box || !box.height || (mine !== undefined && mine !== this.viewport.style.height)) return;
    const height = Math.max(240, Math.floor(box.bottom - top - 12));
    this.viewport.style.height = `${height}px`;
    this.viewport.dataset.sized = this.viewport.style.height;
  }

  clear(): void {
    this.svg?.remove();
    this.svg = null;
    while (this.viewport.firstChild) this.viewport.removeChild(this.viewport.firstChild);
    this.enable(false);
  }

  /** Replaces what the viewport shows by a message (no graph). */
  message(el: HTMLElement): void {
    this.clear();
    this.viewport.appendChild(el);
  }

  setScale(scale: number, at?: { x: number; y: number }): void {
    const svg = this.svg;
    if (!svg || !this.width) return;
    const vp = this.viewport;
    const old = this.scale;
    const next = Math.min(MAX, Math.max(MIN, scale));
    // Keep the point under the cursor (or the centre) where it is.
    const ax = at?.x ?? vp.clientWidth / 2;
    const ay = at?.y ?? vp.clientHeight / 2;
    const gx = (vp.scrollLeft + ax) / old;
    const gy = (vp.scrollTop + ay) / old;
    this.scale = next;
    // Inline style: above the stylesheets' sizing of SVGs (and the width/height attributes).
    svg.style.width = `${this.width * next}px`;
    svg.style.height = `${this.height * next}px`;
    vp.scrollLeft = gx * next - ax;
    vp.scrollTop = gy * next - ay;
    this.level.textContent = `${Math.round(next * 100)}%`;
  }

  zoom(factor: number): void {
    this.setScale(this.scale * factor);
  }

  fit(): void {
    const vp = this.viewport;
    if (!this.width || !this.height || !vp.clientWidth) return;
    this.setScale(Math.min(1, (vp.clientWidth - 4) / this.width, (vp.clientHeight - 4) / this.height));
  }

  /** The graph as an SVG file's text, at its natural size (for the export and tests). */
  svgText(): string {
    return this.svg ? svgText(this.svg, this.width, this.height) : "";
  }

  private saveSvg(): void {
    const text = this.svgText();
    if (text) download(new Blob([text], { type: "image/svg+xml" }), `${this.fileName()}.svg`);
  }

  private async savePng(): Promise<void> {
    const text = this.svgText();
    if (!text) return;
    const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
    try {
      const img = new Image();
      await new Promise<void>((ok, fail) => {
        img.onload = () => ok();
        img.onerror = () => fail(new Error("the browser could not draw the SVG"));
        img.src = url;
      });
      const canvas = document.createElement("canvas");
      canvas.width = Math.ceil(this.width * 2);
      canvas.height = Math.ceil(this.height * 2);
      const g = canvas.getContext("2d");
      if (!g) return;
      g.fillStyle = "#ffffff";
      g.fillRect(0, 0, canvas.width, canvas.height);
      g.drawImage(img, 0, 0, canvas.width, canvas.height);
      const png = await new Promise<Blob | null>((ok) => canvas.toBlob(ok, "image/png"));
      if (png) download(png, `${this.fileName()}.png`);
    } finally {
      URL.revokeObjectURL(url);
    }
  }

  private enable(on: boolean): void {
    for (const b of this.tools) b.disabled = !on;
  }

  private wheel(e: WheelEvent): void {
    if (!this.svg || !(e.ctrlKey || e.metaKey)) return; // a plain wheel scrolls (pans)
    e.preventDefault();
    const r = this.viewport.getBoundingClientRect();
    this.setScale(this.scale * (e.deltaY < 0 ? STEP : 1 / STEP), { x: e.clientX - r.left, y: e.clientY - r.top });
  }

  private key(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "+" || e.key === "=") this.zoom(STEP);
    else if (e.key === "-") this.zoom(1 / STEP);
    else if (e.key === "0") this.setScale(1);
    else return;
    e.preventDefault();
  }

  /** Dragging the background pans; a press on a node is the node's (click, double click). */
  private drag(e: PointerEvent): void {
    const target = e.target as Element | null;
    if (e.button !== 0 || !this.svg || target?.closest?.("g.node, g.cluster")) return;
    const vp = this.viewport;
    const x0 = e.clientX + vp.scrollLeft;
    const y0 = e.clientY + vp.scrollTop;
    vp.setPointerCapture?.(e.pointerId);
    vp.classList.add("tx-panning");
    const move = (m: PointerEvent) => {
      vp.scrollLeft = x0 - m.clientX;
      vp.scrollTop = y0 - m.clientY;
    };
    const up = () => {
      vp.classList.remove("tx-panning");
      vp.removeEventListener("pointermove", move);
      vp.removeEventListener("pointerup", up);
      vp.removeEventListener("pointercancel", up);
    };
    vp.addEventListener("pointermove", move);
    vp.addEventListener("pointerup", up);
    vp.addEventListener("pointercancel", up);
    e.preventDefault();
  }
}
