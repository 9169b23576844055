// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FAST_TIMEOUT, REQUEST_KINDS, Rpc, RpcError, SLOW_KINDS, SLOW_TIMEOUT, type RequestKind, type RequestOf } from "./protocol";
import { renderSource } from "./panes/source";
import { SnapshotRpc } from "./snapshot";

describe("Rpc", () => {
  it("passes the request to the rpc command with a timeout per kind", async () => {
    const seen: { name: string; msg: unknown; signal?: AbortSignal }[] = [];
    const rpc = new Rpc((async (name: string, msg: unknown, opts?: { signal?: AbortSignal }) => {
      seen.push({ name, msg, signal: opts?.signal });
      return [{ kind: "pong" }, []];
    }) as never);
    expect(await rpc.call({ kind: "ping" })).toEqual({ kind: "pong" });
    expect(seen[0].name).toBe("rpc");
    expect(seen[0].signal).toBeInstanceOf(AbortSignal);
    expect(SLOW_TIMEOUT).toBeGreaterThan(FAST_TIMEOUT);
  });

  it("turns error replies into RpcError with the field messages", async () => {
    const rpc = new Rpc((async () => [{ kind: "error", message: "bad", fields: { a: "too big" } }, []]) as never);
    const err = await rpc.call({ kind: "edit", path: "fc", changes: {} }).catch((e) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect(err.message).toBe("bad");
    expect(err.fields).toEqual({ a: "too big" });
  });

  it("explains timeouts and malformed replies", async () => {
    const timeout = new Rpc((async () => {
      throw new DOMException("signal timed out", "TimeoutError");
    }) as never);
    await expect(timeout.call({ kind: "probe" })).rejects.toThrow(/no answer from the kernel after 180 s \(probe\)/);
    const junk = new Rpc((async () => [null, []]) as never);
    await expect(junk.call({ kind: "ping" })).rejects.toThrow("malformed reply to ping");
    await expect(new Rpc(null).call({ kind: "ping" })).rejects.toThrow("read-only");
  });
});

describe("SnapshotRpc", () => {
  const data = {
    nodes: [
      { path: "", name: "", cls: "Net", nkids: 1, params: 3, depth: 0 },
      { path: "fc", name: "fc", cls: "Linear", nkids: 0, params: 3, depth: 1 },
    ],
    children: { "": { folded: [{ path: "fc", name: "fc", cls: "Linear", nkids: 0, params: 3 }], raw: [{ path: "fc", name: "fc", cls: "Linear", nkids: 0, params: 3 }] } },
    cls_of: { fc: "torch.nn.Linear" },
    source: { "torch.nn.Linear": { kind: "source", html: null, reason: "r", qualname: "q" } },
  };

  it("answers browsing requests from the snapshot and refuses actions", async () => {
    const rpc = new SnapshotRpc(data);
    expect((await rpc.call({ kind: "children", path: "" })).items).toHaveLength(1);
    expect((await rpc.call({ kind: "source", path: "fc" })).reason).toBe("r");
    const f = await rpc.call({ kind: "filter", query: "lin", regex: false });
    expect(f.count).toBe(1);
    expect(f.rows.map((r) => [r.path, r.match])).toEqual([["", false], ["fc", true]]);
    expect((await rpc.call({ kind: "reveal", path: "fc" })).chain).toEqual([{ parent: "", index: 0 }]);
    await expect(rpc.call({ kind: "edit", path: "fc", changes: {} })).rejects.toThrow("read-only snapshot");
    await expect(rpc.call({ kind: "source", path: "nope" })).rejects.toThrow("not in this snapshot");
    await expect(rpc.call({ kind: "filter", query: "(", regex: true })).rejects.toThrow("bad regular expression");
  });

  it("answers a leaf's graph with a note (nothing drawn), and unpacks an asset only when asked", async () => {
    let unpacked = 0;
    const rpc = new SnapshotRpc(data, { viz: async () => (unpacked++, "export const x = 1") });
    const leaf = await rpc.call({ kind: "graph", path: "fc" });
    expect(leaf.nodes).toEqual([]);
    expect(leaf.note).toMatch(/^fc has no child modules, so there is no dataflow inside it/);
    await expect(rpc.call({ kind: "graph", path: "" })).rejects.toThrow("the graph of (model) is not in this snapshot");
    expect(unpacked).toBe(0);
    expect((await rpc.call({ kind: "asset", name: "viz" })).code).toBe("export const x = 1");
    expect(unpacked).toBe(1);
    await expect(new SnapshotRpc(data).call({ kind: "asset", name: "viz" })).rejects.toThrow("not included");
  });
});

describe("the generated contract", () => {
  it("waits long for the kinds that re-run the probe and for the graph renderer, not the others", async () => {
    const timedOut = new Rpc((async () => {
      throw new DOMException("signal timed out", "TimeoutError");
    }) as never);
    for (const kind of REQUEST_KINDS) {
      const slow = SLOW_KINDS.has(kind) || kind === "asset" || kind === "diff";
      const seconds = (slow ? SLOW_TIMEOUT : FAST_TIMEOUT) / 1000;
      await expect(timedOut.call({ kind } as RequestOf<RequestKind>)).rejects.toThrow(`after ${seconds} s (${kind})`);
    }
    expect([...SLOW_KINDS].sort()).toEqual(["bulk", "compile", "edit", "export", "memory", "probe", "ranks_plan", "redo", "replace", "undo"]);
  });
});

describe("the source reply", () => {
  it("shows the kernel's note (e.g. the original class of a parametrized module) as text", () => {
    const el = document.createElement("div");
    const note = "parametrized module; showing its original class <Linear>";
    renderSource(el, { kind: "source", html: null, file: null, line: null, reason: "r", qualname: "q", forward_lines: null, note, cell: null });
    expect(el.textContent).toContain(note);
    expect(el.querySelector("Linear")).toBeNull(); // text, never markup
  });
  it("names a notebook cell and its line, the kernel's temporary file only in the tooltip", () => {
    const el = document.createElement("div");
    const file = "/tmp/ipykernel_42/123.py";
    renderSource(el, { kind: "source", html: "", file, line: 3, reason: null, qualname: "__main__.Net", forward_lines: null, note: null, cell: "In [2]" });
    const head = el.querySelector(".tx-srchead") as HTMLElement;
    expect(head.textContent).toBe("__main__.Net — In [2], line 3");
    expect(head.title).toBe(file);
  });
});
