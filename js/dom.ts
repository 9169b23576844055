// Tiny DOM helpers. Text always goes in through text nodes: strings from the model (names, reprs,
// error messages) must never be parsed as HTML.

type Attrs = Record<string, string | number | boolean | null | undefined>;
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, ...children);
  return el;
}

export function append(el: Element, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(n >= 1e10 ? 0 : 1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}k`;
  return String(n);
}

export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

// anywidget may evaluate this module once per widget, so a counter alone would repeat ids
// across the widgets of one page; a random part per module instance keeps them unique.
const instance = Math.random().toString(36).slice(2, 8);
let counter = 0;
export function uid(prefix: string): string {
  counter += 1;
  return `tx-${prefix}-${instance}-${counter}`;
}

/** A module path ("backbone.body.0") that may break only after its dots, never inside a name
 * ("backbo" / "ne"). */
export function breakablePath(path: string): Node[] {
  const out: Node[] = [];
  for (const part of path.split(/(?<=\.)/)) {
    if (out.length) out.push(document.createElement("wbr"));
    out.push(document.createTextNode(part));
  }
  return out;
}

/** A list of shapes ("1×3×224×224, 1×8" or "logits: 1×10, past_key_values[0][0]: 1×4") as
 * unbreakable pieces with line-break opportunities (<wbr>) only between entries and inside long
 * names (after "." and "]"): a shape is never cut ("1×3×224×22" / "4"). */
export function breakable(text: string): Node[] {
  const out: Node[] = [];
  const piece = (t: string) => {
    if (out.length) out.push(document.createElement("wbr"));
    out.push(h("span", { class: "tx-nobr" }, t));
  };
  text.split(", ").forEach((entry, i, all) => {
    const comma = i < all.length - 1 ? "," : "";
    const at = entry.lastIndexOf(": ");
    const parts = at >= 0 ? entry.slice(0, at).split(/(?<=[.\]])/) : [];
    if (parts.length) parts[parts.length - 1] += ":"; // the name's end stays with its colon
    for (const part of parts) piece(part);
    const shape = `${entry.slice(at >= 0 ? at + 2 : 0)}${comma}`;
    if (parts.length) {
      // After a name, the space is the break ("logits: 1×10" reads and copies as it is written).
      out.push(document.createTextNode(" "), h("span", { class: "tx-nobr" }, shape));
    } else piece(shape);
    if (comma) out.push(document.createTextNode(" "));
  });
  return out;
}

export const SVG_NS = "http://www.w3.org/2000/svg";

/** An empty inline SVG chart of `width` x `height` px, an image named `label` for screen readers. */
export function svgChart(cls: string, width: number, height: number, label: string): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("class", cls);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  return svg;
}
