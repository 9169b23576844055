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

/** `text` as text nodes with line-break opportunities only after "×", ", ", "." and ": ", so that
 * a shape list wraps between dimensions or entries ("1×3×224×" / "224"), never inside a number. */
export function breakable(text: string): Node[] {
  const out: Node[] = [];
  for (const piece of text.split(/(?<=×|, |\.|: )/)) {
    if (out.length) out.push(document.createElement("wbr"));
    out.push(document.createTextNode(piece));
  }
  return out;
}
