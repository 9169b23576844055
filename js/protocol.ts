// The frontend's half of the protocol. The message shapes and kind tables come from protocol_gen.ts,
// tools_gen.ts and requests_gen.ts, generated from src/torchxray/protocol.py and _view/*.py
// (`make js`); this file adds the synced state and the Rpc client. Every request and reply is a plain object with a `kind`; the kernel
// answers a bad request with {kind: "error"} rather than raising.
import type { AnyModel } from "@anywidget/types";
import type {
  ErrorReply,
  FoldRow,
  FormField,
  HistoryState,
  Item,
  MoreRow,
  Overview,
  ProbeSummary,
  TreeState,
} from "./protocol_gen";
import type { CompileState, ExportState, RanksState, TrainingState } from "./checks_gen";
import type { ProbeRequest, Replies, Reply, Request, RequestKind } from "./requests_gen";
import { SLOW_TIMEOUT_KINDS } from "./requests_gen";
import { isAbort, type Invoke } from "./transport";

export type * from "./protocol_gen";
export type * from "./requests_gen";
export type * from "./tools_gen";
export type * from "./checks_gen";
export { REQUEST_KINDS, SLOW_KINDS } from "./requests_gen";

/** The probe's modes (protocol.ProbeMode). */
export type ProbeMode = NonNullable<ProbeRequest["mode"]>;

/** A form field (the Python side calls it FormField: forms.Field is the IR record). */
export type Field = FormField;

/** The synced traitlets of the Explorer widget (each state named as the Session method that makes it). */
export interface State {
  tree_state: TreeState;
  selected: string;
  overview: Partial<Overview>; // {} until a module is selected
  probe_summary: ProbeSummary;
  history: HistoryState;
  busy: string;
  error: string;
  probe_mode: ProbeMode;
  readonly: boolean;
  snapshot: Record<string, unknown>;
  training?: Partial<TrainingState>; // {} until ex.watch(...)
  compile?: Partial<CompileState>; // {} until the first compile check
  ranks_state?: Partial<RanksState>; // {} until a plan is shown (tx.explore(..., ranks=plan))
  export_state?: Partial<ExportState>; // {} until the first export check
}

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
export const FAST_TIMEOUT = 15_000;
export const SLOW_TIMEOUT = 180_000;

export class RpcError extends Error {
  fields: Record<string, string>;
  constructor(message: string, fields: Record<string, string> = {}) {
    super(message);
    this.fields = fields;
  }
}

export type { Invoke };

/** The request of kind `K`, as the kernel declares it (requests_gen.ts). */
export type RequestOf<K extends RequestKind> = Extract<Request, { kind: K }>;

/** What the panes send requests through: the kernel (Rpc) or a saved snapshot (SnapshotRpc).
 * The reply's type follows from the request's kind: a field renamed in Python and regenerated
 * fails tsc wherever the view reads it, and a kind or field the kernel does not know fails here. */
export interface Channel {
  readonly connected: boolean;
  call<K extends RequestKind>(request: RequestOf<K>, timeoutMs?: number): Promise<Replies[K]>;
}

/** How requests reach the kernel: anywidget's invoke, the same envelope as custom messages
 * (transport.ts), or nothing (a read-only view). */
export type Transport = "invoke" | "messages" | "none";

/** Sends kind-tagged requests through anywidget's command channel: its `invoke`, or `fallback`
 * (custom messages) where the host has no invoke or its invoke refuses before any answer
 * (marimo 0.25). The request/reply contract and the timeouts are the same either way. */
export class Rpc implements Channel {
  private invoke: Invoke | null;
  private readonly fallback: Invoke | null;
  private answered = false; // invoke answered once: a later error is the kernel's, not the host's
  constructor(invoke: Invoke | null, fallback: Invoke | null = null) {
    this.invoke = invoke ?? fallback;
    this.fallback = fallback;
  }

  get connected(): boolean {
    return this.invoke !== null;
  }

  get transport(): Transport {
    return this.invoke === null ? "none" : this.invoke === this.fallback ? "messages" : "invoke";
  }

  /** Resolves with the reply, or rejects with RpcError (kernel error, timeout, no kernel). */
  async call<K extends RequestKind>(msg: RequestOf<K>, timeoutMs?: number): Promise<Replies[K]> {
    if (!this.invoke) throw new RpcError("read-only snapshot: no kernel is connected");
    const timeout = timeoutMs ?? (SLOW_TIMEOUT_KINDS.has(msg.kind) ? SLOW_TIMEOUT : FAST_TIMEOUT);
    let reply: Reply;
    try {
      reply = await this.send(this.invoke, msg, AbortSignal.timeout(timeout));
    } catch (e) {
      if (isAbort(e)) {
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
    // The kernel answers kind K with Replies[K] (tests/test_protocol.py checks every kind).
    return reply as Replies[K];
  }

  private async send(via: Invoke, msg: Request, signal: AbortSignal): Promise<Reply> {
    try {
      const [r] = await via<Reply>("rpc", msg, { signal });
      if (via !== this.fallback) this.answered = true;
      return r;
    } catch (e) {
      const fallback = this.fallback;
      if (!fallback || via === fallback || this.answered || isAbort(e)) throw e;
      this.invoke = fallback; // from now on: every request, at once
      const [r] = await fallback<Reply>("rpc", msg, { signal });
      return r;
    }
  }
}

export type Model = AnyModel<State>;
