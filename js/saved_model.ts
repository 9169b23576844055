// The anywidget model a saved page (ex.to_html()) gives the Explorer: the synced state, given once,
// read-only; set() and on() still work, so panes follow a selection as in a kernel.
import type { State } from "./protocol";

export function savedModel(state: State) {
  const values: Record<string, unknown> = { ...state, readonly: true };
  const handlers = new Map<string, Set<() => void>>();
  return {
    get: (k: string) => values[k],
    set: (k: string, v: unknown) => {
      values[k] = v;
      handlers.get(`change:${k}`)?.forEach((f) => f());
    },
    on: (e: string, f: () => void) => {
      if (!handlers.has(e)) handlers.set(e, new Set());
      handlers.get(e)?.add(f);
    },
    off: (e?: string | null, f?: (() => void) | null) => {
      if (e && f) handlers.get(e)?.delete(f);
    },
    save_changes: () => undefined,
    send: () => undefined,
    widget_manager: { get_model: () => Promise.reject(new Error("no kernel")) },
  };
}
