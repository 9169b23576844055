// The frontend's half of the protocol. The message shapes come from protocol_gen.ts and
// requests_gen.ts, generated from src/torchxray/protocol.py (`make js`); this file adds the synced
// state and the Rpc client. Every request and reply is a plain object with a `kind`; the kernel
// answers a bad request with {kind: "error"} rather than raising.
import type { AnyModel, Experimental } from "@anywidget/types";
import type {
  ErrorReply,
  FoldRow,
  FormField,
  HistoryState,
  Item,
  MoreRow,
  Overview,
  ProbeSummary,
  Reply,
  TreeState,
} from "./protocol_gen";
import { SLOW_TIMEOUT_KINDS } from "./protocol_gen";

export type * from "./protocol_gen";
export type * from "./requests_gen";
export type * from "./tools_gen";
export { REQUEST_KINDS, SLOW_KINDS } from "./protocol_gen";

/** A form field (the Python side calls it FormField: forms.Field is the IR record). */
export type Field = FormField;

/** The synced traitlets of the Explorer widget. */
export interface State {
  tree: TreeState;
  selected: string;
  overview: Partial<Overview>; // {} until a module is selected
  probe: ProbeSummary;
  history: HistoryState;
  busy: string;
  error: string;
  probe_mode: string;
  readonly: boolean;
  snapshot: Record<string, unknown>;
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
    const timeout = timeoutMs ?? (SLOW_TIMEOUT_KINDS.has(msg.kind) ? SLOW_TIMEOUT : FAST_TIMEOUT);
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
