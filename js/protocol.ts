// Message shapes shared with src/torchxray/protocol.py. Every request and reply is a plain object
// with a `kind`; the kernel answers a bad request with {kind: "error"} rather than raising.
import type { AnyModel, Experimental } from "@anywidget/types";

/** One module row of the tree (see serialize.node_row). */
export interface NodeRow {
  path: string;
  name: string;
  cls: string;
  nkids: number;
  params: number;
  out?: string;
  marks?: string[];
  alias_of?: string; // an alias path: the canonical path of the same module object
  depth?: number; // set in filter results only
  match?: boolean; // set in filter results only
}

/** `count` structurally identical siblings folded into one row ("x80 LlamaDecoderLayer"). */
export interface FoldRow {
  fold: number;
  parent: string;
  start: number;
  cls: string;
  first: string;
  last: string;
}

/** Children not sent yet: the row asks for the next page when activated. */
export interface MoreRow {
  more: number;
  parent: string;
  offset: number;
  unfold: boolean;
}

export type Item = NodeRow | FoldRow | MoreRow;

export interface Page {
  items: Item[];
  total: number;
  offset: number;
}

export interface TreeState {
  rev: number;
  root: NodeRow;
  pages: Record<string, Page>;
}

export interface ProbeError {
  path: string;
  cls: string;
  exc_type: string;
  message: string;
  hint: string;
  input_shapes: string;
}

export interface ProbeSummary {
  ok: boolean | null;
  mode: string;
  status: string;
  count: number;
  error: ProbeError | null;
  changed: number;
  rev: number;
}

export interface HistoryEntry {
  id: number;
  op: string;
  paths: string[];
  old_cls: string;
  new_cls: string;
  changes: Record<string, string>;
  code: string;
}

export interface HistoryState {
  entries: HistoryEntry[];
  can_undo: boolean;
  can_redo: boolean;
  code: string;
  note?: string; // why this model cannot be patched (e.g. TorchScript)
}

export interface Field {
  name: string;
  kind: string;
  text: string;
  default: string | null;
  required: boolean;
  choices: string[];
  origin: string;
  annotation: string;
  optional: boolean;
}

export interface Overview {
  path: string;
  name: string;
  cls: string;
  qualname: string;
  [key: string]: unknown;
}

/** The synced traitlets of the Explorer widget. */
export interface State {
  tree: TreeState;
  selected: string;
  overview: Overview | Record<string, never>;
  probe: ProbeSummary;
  history: HistoryState;
  busy: string;
  error: string;
  probe_mode: string;
  readonly: boolean;
  snapshot: Record<string, unknown>;
}

export interface ErrorReply {
  kind: "error";
  message: string;
  fields?: Record<string, string>;
}

export type Reply = { kind: string; [key: string]: unknown } | ErrorReply;

export function isError(r: Reply): r is ErrorReply {
  return r.kind === "error";
}

export function isFold(item: Item): item is FoldRow {
  return (item as FoldRow).fold !== undefined;
}

export function isMore(item: Item): item is MoreRow {
  return (item as MoreRow).more !== undefined;
}

/** Timeouts per request kind (ms). invoke's default is 3 s; patches re-run the probe. */
const SLOW = new Set(["edit", "replace", "undo", "redo", "probe", "asset"]);
export const FAST_TIMEOUT = 15_000;
export const SLOW_TIMEOUT = 180_000;

export class RpcError extends Error {
  fields: Record<string, string>;
  constructor(message: string, fields: Record<string, string> = {}) {
    super(message);
    this.fields = fields;
  }
}

export type Invoke = Experimental["invoke"];

/** Sends kind-tagged requests through anywidget's command channel. */
export class Rpc {
  private invoke: Invoke | null;
  constructor(invoke: Invoke | null) {
    this.invoke = invoke;
  }

  get connected(): boolean {
    return this.invoke !== null;
  }

  /** Resolves with the reply, or rejects with RpcError (kernel error, timeout, no kernel). */
  async call<T extends { kind: string } = Reply>(
    msg: { kind: string; [k: string]: unknown },
    timeoutMs?: number,
  ): Promise<T> {
    if (!this.invoke) throw new RpcError("read-only snapshot: no kernel is connected");
    const timeout = timeoutMs ?? (SLOW.has(msg.kind) ? SLOW_TIMEOUT : FAST_TIMEOUT);
    let reply: Reply;
    try {
      const [r] = await this.invoke<Reply>("rpc", msg, { signal: AbortSignal.timeout(timeout) });
      reply = r;
    } catch (e) {
      const name = (e as { name?: string })?.name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new RpcError(
          `no answer from the kernel after ${timeout / 1000} s (${msg.kind}); is it busy or stopped?`,
        );
      }
      throw new RpcError(`request ${msg.kind} failed: ${String(e)}`);
    }
    if (!reply || typeof reply !== "object" || typeof reply.kind !== "string") {
      throw new RpcError(`malformed reply to ${msg.kind}`);
    }
    if (isError(reply)) throw new RpcError(reply.message, reply.fields ?? {});
    return reply as unknown as T;
  }
}

export type Model = AnyModel<State>;
