// Test helpers: a fake anywidget model (get/set/on/off like Backbone) and a fake kernel that answers
// the widget's `rpc` requests from a small in-memory model tree. Used by the *.test.ts files only.
import type { Ctx } from "./panes/context";
import type { Item, NodeRow, Page, State } from "./protocol";
import { Rpc } from "./protocol";

type Handler = (...args: unknown[]) => void;

export class FakeModel {
  state: Record<string, unknown>;
  private handlers = new Map<string, Set<Handler>>();
  sent: unknown[] = [];
  saved = 0;
  constructor(state: Partial<State>) {
    this.state = { ...state };
  }
  get(key: string): any {
    return this.state[key];
  }
  set(key: string, value: unknown): void {
    this.state[key] = value;
    this.emit(`change:${key}`);
  }
  on(event: string, fn: Handler): void {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)?.add(fn);
  }
  off(event?: string | null, fn?: Handler | null): void {
    if (!event) this.handlers.clear();
    else if (!fn) this.handlers.delete(event);
    else this.handlers.get(event)?.delete(fn);
  }
  emit(event: string, ...args: unknown[]): void {
    for (const fn of this.handlers.get(event) ?? []) fn(...args);
  }
  save_changes(): void {
    this.saved += 1;
  }
  send(content: unknown): void {
    this.sent.push(content);
  }
  widget_manager = { get_model: async () => this };
  listeners(event: string): number {
    return this.handlers.get(event)?.size ?? 0;
  }
}

export interface FakeNode {
  name: string;
  cls: string;
  params?: number;
  kids?: FakeNode[];
}

/** Flattens a FakeNode tree into rows by path. */
export function index(root: FakeNode): Map<string, { row: NodeRow; kids: string[] }> {
  const out = new Map<string, { row: NodeRow; kids: string[] }>();
  const visit = (n: FakeNode, path: string, depth: number) => {
    const kids = (n.kids ?? []).map((k) => (path ? `${path}.${k.name}` : k.name));
    out.set(path, {
      row: { path, name: n.name, cls: n.cls, nkids: kids.length, params: n.params ?? 0, depth },
      kids,
    });
    (n.kids ?? []).forEach((k, i) => visit(k, kids[i], depth + 1));
  };
  visit(root, "", 0);
  return out;
}

export type KernelHandler = (msg: Record<string, any>) => unknown;

/** A fake kernel: children/filter/reveal from `root`; other kinds from `extra` handlers. */
export function fakeKernel(root: FakeNode, extra: Record<string, KernelHandler> = {}, page = 50) {
  const nodes = index(root);
  const calls: Record<string, any>[] = [];
  const handle = (msg: Record<string, any>): unknown => {
    calls.push(msg);
    if (extra[msg.kind]) return extra[msg.kind](msg);
    const n = nodes.get(msg.path ?? "");
    switch (msg.kind) {
      case "children": {
        if (!n) return { kind: "error", message: `no module at path '${msg.path}'` };
        const start = msg.offset ?? 0;
        const limit = msg.limit || page;
        const kids = n.kids.slice(start, start + Math.min(limit, page));
        const items: Item[] = kids.map((p) => ({ ...nodes.get(p)!.row, depth: undefined }));
        const left = (msg.unfold ? Math.min(limit, n.kids.length - start) : n.kids.length - start) - kids.length;
        if (left > 0) items.push({ more: left, parent: n.row.path, offset: start + kids.length, unfold: !!msg.unfold });
        return { kind: "children", path: n.row.path, items, total: n.kids.length, offset: start } satisfies Page & {
          kind: string;
          path: string;
        };
      }
      case "filter": {
        const q = String(msg.query).toLowerCase();
        const rows = [...nodes.values()]
          .filter((x) => x.row.path.toLowerCase().includes(q) || x.row.cls.toLowerCase().includes(q))
          .map((x) => ({ ...x.row, match: true }));
        return { kind: "filter", count: rows.length, rows, truncated: false };
      }
      case "reveal": {
        const parts = String(msg.path).split(".");
        const chain = parts.map((_, i) => {
          const parent = parts.slice(0, i).join(".");
          return { parent, index: nodes.get(parent)!.kids.indexOf(parts.slice(0, i + 1).join(".")) };
        });
        return { kind: "reveal", chain };
      }
      case "select":
        return n ? { kind: "select", path: msg.path } : { kind: "error", message: `no module at path '${msg.path}'` };
      default:
        return { kind: "error", message: `unknown request kind '${msg.kind}'` };
    }
  };
  const invoke = async <T>(name: string, msg?: any): Promise<[T, DataView[]]> => {
    if (name !== "rpc") throw new Error(`unknown command ${name}`);
    await Promise.resolve();
    return [handle(msg) as T, []];
  };
  return { invoke, calls, nodes };
}

/** First tree state as the kernel sends it: root plus its children page. */
export function firstState(root: FakeNode, rev = 1) {
  const nodes = index(root);
  const top = nodes.get("")!;
  return {
    rev,
    root: top.row,
    pages: { "": { items: top.kids.map((p) => nodes.get(p)!.row), total: top.kids.length, offset: 0 } },
  };
}

export const flush = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0));
};

/** A pane's context over a fake kernel: `run` records an action's error in `errors` and resolves
 * undefined, as the widget's does; `extra` overrides the rest (select, openSource...). */
export function paneCtx(
  kernel: { invoke: unknown },
  model: FakeModel,
  readonly: boolean,
  errors: string[],
  extra: Partial<Ctx> = {},
): Ctx {
  return {
    rpc: new Rpc(kernel.invoke as never),
    model: model as never,
    readonly,
    run: async (_label, fn) => {
      try {
        return await fn();
      } catch (e) {
        errors.push(String(e));
        return undefined;
      }
    },
    error: () => undefined,
    select: () => undefined,
    ...extra,
  };
}
