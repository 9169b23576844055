// Read-only mode: answers the widget's requests from a snapshot the kernel made (_view/snapshot.py),
// for ex.to_html() files and notebooks saved with widget state, where no kernel is connected.
import { FilterSyntaxError, filterRows } from "./filter_match";
import type { Channel, FilterResult, Item, Replies, RequestKind, RequestOf, Snapshot } from "./protocol";
import { RpcError } from "./protocol";

const READ_ONLY = "read-only snapshot: no kernel is connected, actions are disabled";

/** Code the page carries (the graph renderer): its text, or a function that unpacks it when first
 * asked for (ex.to_html() pages keep it compressed until a graph is drawn). */
export type Assets = Record<string, string | (() => Promise<string>)>;

export class SnapshotRpc implements Channel {
  readonly connected = false;
  private readonly data: Partial<Snapshot>;
  constructor(
    data: Partial<Snapshot> | Record<string, unknown> | null | undefined,
    private readonly assets: Assets = {},
  ) {
    // The widget state as the kernel saved it: {} until ex.save_snapshot().
    this.data = (data ?? {}) as Partial<Snapshot>;
  }

  async call<K extends RequestKind>(request: RequestOf<K>): Promise<Replies[K]> {
    if (request.kind === "asset") {
      const name = (request as RequestOf<"asset">).name;
      const found = this.assets[name];
      if (!found) throw new RpcError("the graph renderer is not included in this snapshot");
      const code = typeof found === "string" ? found : await found();
      return { kind: "asset", name, code } as Replies[K];
    }
    // Each case answers its own kind with that kind's reply; tsc cannot follow K into the switch.
    return this.answer(request as RequestOf<RequestKind>) as Replies[K];
  }

  private answer(msg: RequestOf<RequestKind>): Replies[RequestKind] {
    const d = this.data;
    const where = (path: string | null | undefined) => path || "(model)";
    switch (msg.kind) {
      case "children": {
        const c = d.children?.[msg.path];
        if (!c) throw new RpcError(`children of ${where(msg.path)} are not in this snapshot`);
        const offset = msg.offset ?? 0;
        const limit = msg.limit || Infinity;
        const items: Item[] = msg.unfold ? c.raw.slice(offset, offset + limit) : c.folded.slice(offset);
        return { kind: "children", path: msg.path, items, total: items.length, offset };
      }
      case "filter":
        return { kind: "filter", ...this.filter(msg.query, Boolean(msg.regex), Boolean(msg.names)) };
      case "reveal": {
        const chain: { parent: string; index: number }[] = [];
        const parts = msg.path ? msg.path.split(".") : [];
        for (let i = 0; i < parts.length; i++) {
          const parent = parts.slice(0, i).join(".");
          const child = parts.slice(0, i + 1).join(".");
          const index = d.children?.[parent]?.raw.findIndex((r) => r.path === child) ?? -1;
          if (index < 0) break;
          chain.push({ parent, index });
        }
        return { kind: "reveal", chain };
      }
      case "source": {
        const key = msg.cls ? msg.cls : d.cls_of?.[msg.path];
        const v = key ? d.source?.[key] : undefined;
        if (!v) throw new RpcError(`source of ${msg.cls ?? where(msg.path)} is not in this snapshot`);
        return v;
      }
      case "form": {
        if (msg.cls) throw new RpcError(READ_ONLY);
        const v = d.form?.[msg.path ?? ""];
        if (!v) throw new RpcError(`form of ${where(msg.path)} is not in this snapshot`);
        return v;
      }
      case "mro": {
        const v = d.mro?.[d.cls_of?.[msg.path] ?? ""];
        if (!v) throw new RpcError(`class graph of ${where(msg.path)} is not in this snapshot`);
        return v;
      }
      case "graph": {
        const v = d.graph?.[msg.path];
        if ((msg.depth ?? 1) !== 1 || msg.open?.length) throw new RpcError("this snapshot holds each module's graph one level deep, its groups folded: deeper views need the kernel");
        if (!v && d.nodes?.find((n) => n.path === msg.path)?.nkids === 0) {
          // A leaf has no graph to hold: answer as the kernel does (graph_dot.build), nothing drawn.
          const note = `${msg.path || "the model"} has no child modules, so there is no dataflow inside it to draw: its inputs and outputs are in the Overview`;
          return { kind: "graph", path: msg.path, dot: "", nodes: [], edges: 0, note, depth: 1 };
        }
        if (!v) throw new RpcError(`the graph of ${where(msg.path)} is not in this snapshot`);
        return v;
      }
      case "probe_table":
        if (!d.probe_table) throw new RpcError("no probe in this snapshot");
        return d.probe_table;
      default:
        throw new RpcError(READ_ONLY);
    }
  }

  private filter(query: string, regex: boolean, names: boolean): FilterResult {
    try {
      return filterRows(this.data.nodes ?? [], query, regex, names);
    } catch (e) {
      if (e instanceof FilterSyntaxError) throw new RpcError(`bad regular expression: ${e.message}`);
      throw e;
    }
  }
}
