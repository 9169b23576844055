// Read-only mode: answers the widget's requests from a snapshot the kernel made (serialize.snapshot),
// for ex.to_html() files and notebooks saved with widget state, where no kernel is connected.
import type { Item, NodeRow, Reply } from "./protocol";
import { RpcError } from "./protocol";

export interface SnapshotData {
  nodes?: NodeRow[]; // pre-order, with depth
  children?: Record<string, { folded: Item[]; raw: NodeRow[] }>;
  overview?: Record<string, unknown>;
  cls_of?: Record<string, string>; // path -> class key of `source` and `mro`
  source?: Record<string, unknown>;
  form?: Record<string, unknown>;
  mro?: Record<string, unknown>;
  probe_table?: Record<string, unknown>;
  [k: string]: unknown;
}

const READ_ONLY = "read-only snapshot: no kernel is connected, actions are disabled";

export class SnapshotRpc {
  readonly connected = false;
  constructor(
    private readonly data: SnapshotData | Record<string, unknown> | null | undefined,
    private readonly assets: Record<string, string> = {},
  ) {}

  async call<T extends { kind: string } = Reply>(msg: { kind: string; [k: string]: unknown }): Promise<T> {
    const d = (this.data ?? {}) as SnapshotData;
    const path = String(msg.path ?? "");
    const pick = (table: Record<string, unknown> | undefined, what: string) => {
      const v = table?.[path];
      if (!v) throw new RpcError(`${what} of ${path || "(model)"} is not in this snapshot`);
      return v as T;
    };
    switch (msg.kind) {
      case "children": {
        const c = d.children?.[path];
        if (!c) throw new RpcError(`children of ${path || "(model)"} are not in this snapshot`);
        const offset = Number(msg.offset ?? 0);
        const limit = Number(msg.limit ?? 0) || Infinity;
        const items: Item[] = msg.unfold ? c.raw.slice(offset, offset + limit) : c.folded.slice(offset);
        return { kind: "children", items, total: items.length, offset } as unknown as T;
      }
      case "filter":
        return this.filter(String(msg.query ?? ""), Boolean(msg.regex), Boolean(msg.names)) as unknown as T;
      case "reveal": {
        const chain: { parent: string; index: number }[] = [];
        const parts = path ? path.split(".") : [];
        for (let i = 0; i < parts.length; i++) {
          const parent = parts.slice(0, i).join(".");
          const child = parts.slice(0, i + 1).join(".");
          const index = d.children?.[parent]?.raw.findIndex((r) => r.path === child) ?? -1;
          if (index < 0) break;
          chain.push({ parent, index });
        }
        return { kind: "reveal", chain } as unknown as T;
      }
      case "source": {
        const key = msg.cls ? String(msg.cls) : d.cls_of?.[path];
        const v = key ? d.source?.[key] : undefined;
        if (!v) throw new RpcError(`source of ${msg.cls ?? (path || "(model)")} is not in this snapshot`);
        return v as T;
      }
      case "form":
        if (msg.cls) throw new RpcError(READ_ONLY);
        return pick(d.form, "form");
      case "mro": {
        const v = d.mro?.[d.cls_of?.[path] ?? ""];
        if (!v) throw new RpcError(`class graph of ${path || "(model)"} is not in this snapshot`);
        return v as T;
      }
      case "probe_table":
        if (!d.probe_table) throw new RpcError("no probe in this snapshot");
        return d.probe_table as unknown as T;
      case "asset": {
        const code = this.assets[String(msg.name)];
        if (!code) throw new RpcError("the graph renderer is not included in this snapshot");
        return { kind: "asset", name: msg.name, code } as unknown as T;
      }
      default:
        throw new RpcError(READ_ONLY);
    }
  }

  private filter(query: string, regex: boolean, names = false): Reply {
    let test: (s: string) => boolean;
    if (regex) {
      let re: RegExp;
      try {
        re = new RegExp(query, "i");
      } catch (e) {
        throw new RpcError(`bad regular expression: ${(e as Error).message}`);
      }
      test = (s) => re.test(s);
    } else {
      const q = query.toLowerCase();
      test = (s) => s.toLowerCase().includes(q);
    }
    const nodes = ((this.data ?? {}) as SnapshotData).nodes ?? [];
    const keep = new Map<string, boolean>();
    let count = 0;
    for (const n of nodes) {
      const hit = names ? n.path !== "" && test(n.path.split(".").pop() ?? "") : test(n.path) || test(n.cls);
      if (!hit) continue;
      count += 1;
      keep.set(n.path, true);
      const parts = n.path ? n.path.split(".") : [];
      for (let i = 0; i < parts.length; i++) {
        const a = parts.slice(0, i).join(".");
        if (!keep.has(a)) keep.set(a, false);
      }
    }
    const rows = nodes.filter((n) => keep.has(n.path)).map((n) => ({ ...n, match: keep.get(n.path) }));
    return { kind: "filter", count, rows, truncated: false };
  }
}
