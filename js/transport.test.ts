// @vitest-environment happy-dom
// The custom-message fallback of Rpc: what a host without anywidget's invoke (marimo) gets.
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush } from "./fake_model";
import { FAST_TIMEOUT, Rpc, SLOW_TIMEOUT } from "./protocol";
import { messageInvoke } from "./transport";
import { createExplorer } from "./widget";

const MARIMO = "anywidget.invoke not supported in marimo. Please file an issue at https://github.com/marimo-team/marimo/issues";

/** marimo 0.25's experimental.invoke: it throws, whatever it is asked. */
const refuses = (async () => {
  throw new Error(MARIMO);
}) as never;

/** A model whose custom messages reach `answer` (the kernel's command), replies coming back as
 * msg:custom, asynchronously, as a comm delivers them. */
function wired(answer: (msg: Record<string, any>) => unknown, state: Record<string, unknown> = {}) {
  const model = new FakeModel(state);
  const envelopes: Record<string, any>[] = [];
  model.send = (content: any) => {
    envelopes.push(content);
    if (content?.kind !== "anywidget-command") return;
    void Promise.resolve(answer(content.msg)).then((response) => {
      setTimeout(() => {
        const other = { kind: "error", message: "not mine" };
        model.emit("msg:custom", { id: "someone-else", kind: "anywidget-command-response", response: other }, []);
        model.emit("msg:custom", { id: content.id, kind: "anywidget-command-response", response }, []);
      }, 0);
    });
  };
  return { model, envelopes };
}

describe("messageInvoke", () => {
  it("sends anywidget's command envelope and resolves with the reply of the same id", async () => {
    const { model, envelopes } = wired(() => ({ kind: "pong" }));
    const invoke = messageInvoke(model as never);
    const [reply, buffers] = await invoke("rpc", { kind: "ping" });
    expect(reply).toEqual({ kind: "pong" });
    expect(buffers).toEqual([]);
    expect(envelopes[0]).toMatchObject({ kind: "anywidget-command", name: "rpc", msg: { kind: "ping" } });
    expect(typeof envelopes[0].id).toBe("string");
    expect(model.listeners("msg:custom")).toBe(0); // its listener is gone once answered
  });

  it("rejects with the signal's reason when no answer comes, and stops listening", async () => {
    const model = new FakeModel({});
    const invoke = messageInvoke(model as never);
    const err = await invoke("rpc", { kind: "ping" }, { signal: AbortSignal.timeout(20) }).catch((e) => e);
    expect(err.name).toBe("TimeoutError");
    expect(model.listeners("msg:custom")).toBe(0);
    expect(model.sent).toHaveLength(1);
  });

  it("fails at once when the host refuses to send", async () => {
    const model = new FakeModel({});
    model.send = (() => Promise.reject(new Error("comm closed"))) as never;
    await expect(messageInvoke(model as never)("rpc", { kind: "ping" })).rejects.toThrow("comm closed");
    expect(model.listeners("msg:custom")).toBe(0);
  });
});

describe("Rpc's fallback", () => {
  it("switches to custom messages when invoke refuses, for that request and every later one", async () => {
    let invoked = 0;
    const invoke = (async () => {
      invoked += 1;
      throw new Error(MARIMO);
    }) as never;
    const { model, envelopes } = wired((m) => (m.kind === "ping" ? { kind: "pong" } : { kind: "select", path: m.path }));
    const rpc = new Rpc(invoke, messageInvoke(model as never));
    expect(rpc.transport).toBe("invoke");
    expect(await rpc.call({ kind: "ping" })).toEqual({ kind: "pong" });
    expect(rpc.transport).toBe("messages");
    expect(await rpc.call({ kind: "select", path: "fc" })).toEqual({ kind: "select", path: "fc" });
    expect(invoked).toBe(1);
    expect(envelopes.map((e) => e.msg.kind)).toEqual(["ping", "select"]);
  });

  it("keeps the contract: error replies become RpcError, timeouts per kind", async () => {
    const { model } = wired(() => ({ kind: "error", message: "bad", fields: { a: "too big" } }));
    const rpc = new Rpc(null, messageInvoke(model as never));
    expect(rpc.transport).toBe("messages");
    const err = await rpc.call({ kind: "edit", path: "fc", changes: {} }).catch((e) => e);
    expect(err.message).toBe("bad");
    expect(err.fields).toEqual({ a: "too big" });
    // No answer: the same message as invoke's timeout, after the kind's own wait.
    const mute = new Rpc(refuses, messageInvoke(new FakeModel({}) as never));
    await expect(mute.call({ kind: "ping" }, 30)).rejects.toThrow(/no answer from the kernel after 0.03 s \(ping\)/);
    expect(SLOW_TIMEOUT).toBeGreaterThan(FAST_TIMEOUT);
  });

  it("does not fall back on a timeout, nor once invoke has answered", async () => {
    const sent: unknown[] = [];
    const fallback = (async (...args: unknown[]) => {
      sent.push(args);
      return [{ kind: "pong" }, []];
    }) as never;
    const timesOut = new Rpc((async () => {
      throw new DOMException("signal timed out", "TimeoutError");
    }) as never, fallback);
    await expect(timesOut.call({ kind: "ping" })).rejects.toThrow(/no answer from the kernel/);
    let calls = 0;
    const flaky = new Rpc((async () => {
      calls += 1;
      if (calls > 1) throw new Error("kernel restarting");
      return [{ kind: "pong" }, []];
    }) as never, fallback);
    await flaky.call({ kind: "ping" });
    await expect(flaky.call({ kind: "ping" })).rejects.toThrow("request ping failed: Error: kernel restarting");
    expect(sent).toHaveLength(0);
    expect(flaky.transport).toBe("invoke");
  });
});

describe("the Explorer in a host without invoke", () => {
  it("draws the tree, selects and says it went through custom messages", async () => {
    const root = { name: "", cls: "Net", params: 240, kids: [{ name: "fc", cls: "Linear", params: 240 }] };
    const kernel = fakeKernel(root, { ping: () => ({ kind: "pong" }) });
    const { model } = wired((m) => kernel.invoke("rpc", m).then(([r]) => r), {
      tree_state: firstState(root) as never,
      selected: "",
      overview: {},
      probe_summary: { rev: 1, ok: true, status: "probe ok", mode: "fake" } as never,
      history: { entries: [], can_undo: false, can_redo: false, code: "" },
      busy: "",
      error: "",
      probe_mode: "fake",
      readonly: false,
      snapshot: {},
    });
    const el = document.createElement("div");
    const ex = createExplorer({ model: model as never, el, experimental: { invoke: refuses } });
    await flush(20);
    expect(el.querySelector(".tx-root")?.getAttribute("data-transport")).toBe("messages");
    expect(el.textContent).not.toContain("read-only");
    const row = [...el.querySelectorAll<HTMLElement>("[role=treeitem]")].find((r) => r.textContent?.includes("fc"));
    row?.click();
    await new Promise((r) => setTimeout(r, 120)); // the selection is sent after a short debounce
    expect(kernel.calls.map((c) => c.kind)).toContain("select");
    ex.dispose();
  });
});
