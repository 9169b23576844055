// Keys typed inside the widget stay inside it. In command mode JupyterLab's notebook acts on keys
// wherever focus is in the notebook, data-lm-suppress-shortcuts notwithstanding (b inserts a cell,
// m makes it Markdown, d d deletes the cell holding this widget, z undoes a cell operation, and
// Ctrl+X would cut the cell), so the widget stops their propagation, as ipywidgets'
// text fields do. Escape and Shift/Ctrl/Alt+Enter still reach the notebook (leave the widget, run
// the cell), and so does Ctrl/Cmd+S (save). Ctrl+Z / Ctrl+Shift+Z (or Ctrl+Y) undo and redo
// patches here, and only here.
// Notebook 7 reads keys in the capture phase, before the widget sees them, and Lumino matches a
// binding's selector against the focused element itself before it looks for
// data-lm-suppress-shortcuts on the way up: "notebook:move-cursor-down" is bound to ArrowDown on
// `.jp-Notebook.jp-mod-commandMode :focus`, which the focused tree matches. So whatever takes
// focus in the widget carries the attribute itself.

export interface UndoRedo {
  undo(): void;
  redo(): void;
}

const EVENTS = ["keydown", "keypress", "keyup"] as const;
const SUPPRESS = "data-lm-suppress-shortcuts";

/** Keys the notebook keeps even when they are typed inside the widget. */
function passesThrough(e: KeyboardEvent): boolean {
  if (e.key === "Escape") return true;
  if (e.key === "Enter") return e.shiftKey || e.ctrlKey || e.altKey || e.metaKey;
  return (e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s";
}

function isUndoKey(e: KeyboardEvent): boolean {
  const k = e.key.toLowerCase();
  return (e.ctrlKey || e.metaKey) && !e.altKey && (k === "z" || k === "y");
}

/** Where Ctrl+Z belongs to the text being edited, not to the patch log. */
function editsText(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
  return el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes((el as HTMLInputElement).type);
}

/** Keeps keys typed inside `root` from the page; returns a function that removes the listeners. */
export function containKeys(root: HTMLElement, log: UndoRedo): () => void {
  const onKey = (e: KeyboardEvent) => {
    if (passesThrough(e)) return;
    e.stopPropagation();
    if (e.type !== "keydown" || !isUndoKey(e) || editsText(e.target)) return;
    e.preventDefault();
    const redo = e.key.toLowerCase() === "y" || e.shiftKey;
    if (redo) log.redo();
    else log.undo();
  };
  const onFocus = (e: FocusEvent) => {
    const el = e.target as HTMLElement | null;
    if (el?.setAttribute && !el.hasAttribute(SUPPRESS)) el.setAttribute(SUPPRESS, "true");
  };
  for (const type of EVENTS) root.addEventListener(type, onKey);
  root.addEventListener("focusin", onFocus);
  return () => {
    for (const type of EVENTS) root.removeEventListener(type, onKey);
    root.removeEventListener("focusin", onFocus);
  };
}
