// anywidget's command call (`invoke`) made of custom messages: the envelope anywidget's own invoke
// sends ({id, kind: "anywidget-command", name, msg} through model.send) and the reply the kernel's
// `anywidget.experimental.command` sends back ({id, kind: "anywidget-command-response", response}
// as a custom message). For hosts whose invoke is missing or refuses: marimo 0.25 throws
// "anywidget.invoke not supported in marimo" but relays model.send and msg:custom both ways.
// Rpc (protocol.ts) falls back to it; the kernel side is unchanged (Explorer.rpc answers both).
import type { AnyModel, Experimental } from "@anywidget/types";

export type Invoke = Experimental["invoke"];

/** What the transport needs of the model: custom messages, both ways. */
export type MessageModel = Pick<AnyModel, "on" | "off" | "send">;

interface CommandReply {
  id?: unknown;
  kind?: unknown;
  response?: unknown;
}

let counter = 0;

// crypto.randomUUID() exists in secure contexts only (a notebook served over plain http has none).
function newId(): string {
  counter += 1;
  return `tx-${Date.now().toString(36)}-${counter.toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

/** An `invoke` over `model`'s custom messages, with anywidget's signature and semantics: resolves
 * with [response, buffers], rejects with the signal's reason when it aborts (3 s by default). */
export function messageInvoke(model: MessageModel): Invoke {
  const call = <T>(name: string, msg?: unknown, options: { buffers?: DataView[]; signal?: AbortSignal } = {}) => {
    const id = newId();
    const signal = options.signal ?? AbortSignal.timeout(3000);
    return new Promise<[T, DataView[]]>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const done = () => {
        model.off("msg:custom", onMessage);
        signal.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      function onMessage(content: CommandReply, buffers: DataView[]): void {
        if (!content || content.id !== id || content.kind !== "anywidget-command-response") return;
        done();
        resolve([content.response as T, buffers ?? []]);
      }
      signal.addEventListener("abort", onAbort);
      model.on("msg:custom", onMessage);
      try {
        // marimo's send returns a promise: a refused send fails the call now, not at its timeout.
        const sent: unknown = model.send({ id, kind: "anywidget-command", name, msg }, undefined, options.buffers ?? []);
        if (sent && typeof (sent as Promise<unknown>).then === "function") {
          (sent as Promise<unknown>).then(undefined, (e: unknown) => {
            done();
            reject(e);
          });
        }
      } catch (e) {
        done();
        reject(e);
      }
    });
  };
  return call as Invoke;
}

/** anywidget's own invoke rejects only with its signal's reason (a timeout or an abort): any other
 * rejection comes from a host that cannot invoke. */
export function isAbort(e: unknown): boolean {
  const name = (e as { name?: string } | null)?.name;
  return name === "TimeoutError" || name === "AbortError";
}
