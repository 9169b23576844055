// What the widget assumes of the page that hosts it, kept to plain DOM so that JupyterLab,
// Notebook 7, VS Code's notebooks and marimo all work: no Lumino, --jp-* or JupyterLab class is
// required (each is used only with a fallback), and keys are contained by keys.ts at the root.
//
// The one host-specific piece: after the widget, the kernel displays a read-only stand-in
// (_view/static_html.py) for a notebook reopened without its kernel. Where the widget draws, the
// stand-in is redundant: styles.css hides it by JupyterLab's output classes, and `hideStandIn`
// does it for hosts whose outputs have other classes (VS Code), from the DOM's shape alone.

const LEVELS = 8; // ancestors looked at, from the widget's element up to its output

/** Hides the stand-in shown as the output right after the one holding `el`; returns it, or null
 * when the next output (the first following sibling met going up) is anything else. */
export function hideStandIn(el: HTMLElement): HTMLElement | null {
  let node: HTMLElement | null = el;
  for (let i = 0; i < LEVELS && node; i++, node = node.parentElement) {
    const next = node.nextElementSibling;
    if (!next) continue;
    if (next.querySelector(".tx-root")) return null; // another widget's output: not ours
    const stand = next.classList.contains("tx-static") ? (next as HTMLElement) : next.querySelector<HTMLElement>(".tx-static");
    if (stand) stand.style.display = "none";
    return stand;
  }
  return null;
}

/** Runs `fn` once `el` is in the page (hosts attach the widget's element after render), trying
 * for about a second. */
export function whenAttached(el: HTMLElement, fn: () => void, frames = 60): void {
  if (el.isConnected) fn();
  else if (frames > 0) requestAnimationFrame(() => whenAttached(el, fn, frames - 1));
}
