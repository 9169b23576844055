// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, paneCtx, type FakeNode } from "../fake_model";
import { Rpc } from "../protocol";
import { MemoryPane, answer, fitText, parseSize } from "./memory";
import type { MemoryReply } from "../protocol";
import { sizeText } from "./overview";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "fc", cls: "Linear", params: 3 }] };
const GiB = 2 ** 30;

function setup(readonly = false) {
  const asked: Record<string, any>[] = [];
  const errors: string[] = [];
  const kernel = fakeKernel(NET, {
    memory: (m) => {
      asked.push(m);
      const t = Boolean(m.training);
      return {
        kind: "memory", path: m.path, training: t, optimizer: t ? m.optimizer : "none", device: "cpu",
        dtypes: ["bfloat16"], params: 4 * GiB, grads: t ? 4 * GiB : 0, optimizer_state: t && m.optimizer !== "none" ? 8 * GiB : 0,
        activations: t ? 2 * GiB : 0, peak: 0, model_peak: t ? 20 * GiB : 5 * GiB,
        devices: [{ name: "CPU RAM", bytes: 16 * GiB }, { name: "cuda:0 (NVIDIA H200)", bytes: 140 * GiB }],
        note: t ? "" : "inference: no gradients",
      };
    },
  });
  const model = new FakeModel({ selected: "fc", tree_state: firstState(NET) as never });
  const ctx = paneCtx(kernel, model, readonly, errors);
  return { pane: new MemoryPane(ctx), asked, errors };
}

describe("parseSize", () => {
  it("reads decimal and binary units, and says how to write a size otherwise", () => {
    expect(parseSize("24 GB")).toBe(24e9);
    expect(parseSize("80GiB")).toBe(80 * GiB);
    expect(parseSize(" 16 g ")).toBe(16 * GiB);
    expect(parseSize("512 mb")).toBe(512e6);
    expect(parseSize("1.5 TB")).toBe(1.5e12);
    expect(parseSize("4096")).toBe(4096);
    expect(() => parseSize("24 gigs")).toThrow(/unknown unit "gigs".*24 GB/);
    expect(() => parseSize("lots")).toThrow(/not a number followed by a unit/);
    expect(() => parseSize("0 GB")).toThrow(/more than 0/);
  });
  it("says whether a peak fits and by how much", () => {
    expect(fitText(5, 10)).toEqual([true, "fits (50% used)"]);
    expect(fitText(30, 10)).toEqual([false, "does not fit (needs 3.0×)"]);
  });
});

describe("MemoryPane", () => {
  it("asks for the selected module with the chosen options and draws the stacked bar", async () => {
    const { pane, asked } = setup();
    await pane.show();
    expect(asked[0]).toMatchObject({ kind: "memory", path: "fc", training: false, optimizer: "adamw" });
    expect(pane.el.querySelector("select")?.disabled).toBe(true); // no optimizer in inference
    expect(pane.el.querySelectorAll(".tx-memseg").length).toBe(1); // weights only
    expect(pane.el.textContent).toContain("inference (forward)");
    expect(pane.el.textContent).toContain("bfloat16");
    const sw = pane.el.querySelector<HTMLInputElement>('input[role="switch"]');
    sw!.checked = true;
    sw!.dispatchEvent(new Event("change"));
    await flush();
    expect(asked[1]).toMatchObject({ training: true, optimizer: "adamw" });
    const segs = [...pane.el.querySelectorAll<HTMLElement>(".tx-memseg")];
    expect(segs.map((s) => Math.round(Number.parseFloat(s.style.width)))).toEqual([22, 22, 44, 11]);
    expect(pane.el.querySelector(".tx-membar")?.getAttribute("aria-label")).toContain("optimizer 8.0 GiB, activations 2.0 GiB");
    const fits = [...pane.el.querySelectorAll(".tx-memfits li")].map((li) => li.textContent);
    expect(fits[0]).toBe("CPU RAM 16.0 GiB: does not fit (needs 1.3×)");
    expect(fits[1]).toBe("cuda:0 (NVIDIA H200) 140.0 GiB: fits (14% used)");
  });

  it("answers first and large, the rest labelled: a block's own tensors, the model's figures named", async () => {
    const { pane } = setup();
    await pane.show();
    const big = pane.el.querySelector(".tx-mem-answer")!;
    expect(big.querySelector(".tx-mem-big")?.textContent).toBe("4.0 GiB");
    expect(big.textContent).toContain("held by fc in a forward: its weights and buffers");
    expect(pane.el.querySelector(".tx-memlegend")?.textContent).toBe("weights 4.0 GiB"); // no "activations 0 B"
    const terms = [...pane.el.querySelectorAll(".tx-mem-context dt")].map((d) => d.textContent);
    expect(terms).toEqual(["weights' dtype", "measured on", "model peak"]);
    const r = { path: "", training: true, optimizer: "adamw", model_peak: 20 * GiB, peak: 0 } as MemoryReply;
    expect(answer(r, 18 * GiB).textContent).toBe('20.0 GiB model peak in a training step (adamw): what a device needs ("Fits on" below compares it)');
    const sub = { ...r, path: "blocks.1.1", peak: 3 * GiB };
    expect(answer(sub, 18 * GiB).textContent).toContain("18.0 GiB held by blocks.1.1 in a training step (adamw): weights, gradients");
  });

  it("compares with a typed size and names bad input", async () => {
    const { pane } = setup();
    await pane.show();
    const input = pane.el.querySelector<HTMLInputElement>('input[aria-label="device size"]')!;
    input.value = "24 GB";
    input.dispatchEvent(new Event("input"));
    const out = pane.el.querySelector(".tx-mem-size")!;
    expect(out.textContent).toBe("22.4 GiB: fits (22% used)");
    input.value = "24 gigs";
    input.dispatchEvent(new Event("input"));
    expect(out.textContent).toContain('unknown unit "gigs"');
    expect(out.classList.contains("tx-bad")).toBe(true);
  });

  it("changes the optimizer and keeps only the newest answer", async () => {
    const { pane, asked } = setup();
    const sw = pane.el.querySelector<HTMLInputElement>('input[role="switch"]')!;
    sw.checked = true;
    const sel = pane.el.querySelector("select")!;
    sel.value = "sgd";
    const first = pane.show();
    sel.value = "none";
    await Promise.all([first, pane.show()]);
    expect(asked.map((m) => m.optimizer)).toEqual(["sgd", "none"]);
    expect(pane.el.textContent).toContain("no optimizer");
    expect(pane.el.querySelectorAll(".tx-memseg").length).toBe(3);
  });

  it("says a snapshot has no kernel instead of asking", async () => {
    const { pane, asked } = setup(true);
    await pane.show();
    expect(asked).toEqual([]);
    expect(pane.el.textContent).toContain("read-only snapshot");
  });
});

describe("sizeText", () => {
  it("gives bytes per rank where a rank holds less, and stored bytes of quantized weights", () => {
    expect(sizeText(4096, 4096)).toBe("4.0 KiB");
    expect(sizeText(4096, 1024, "DTensor Shard(0) on mesh (4,)")).toBe("4.0 KiB in total, 1.0 KiB per rank");
    expect(sizeText(4096, 1024, "cpu (Int8Tensor)")).toBe("4.0 KiB logical, 1.0 KiB stored");
  });
});

describe("OverviewPane", () => {
  it("shows the placement, bytes per rank and why a module was not called", async () => {
    const { OverviewPane } = await import("./overview");
    const model = new FakeModel({
      selected: "fc",
      overview: { path: "fc", name: "fc", cls: "Linear", qualname: "torch.nn.Linear", params_total: 3, params_own: 3, trainable_total: 3, bytes_total: 4096, bytes_local: 1024, placement: "DTensor Shard(0) on mesh (4,)", devices: ["cpu"], dtypes: ["float32"], hooks: [], probe: null, not_called: "fused fast path" } as never,
    });
    const pane = new OverviewPane({ rpc: new Rpc(null), model: model as never, readonly: true, run: async (_l, fn) => fn(), error: () => undefined, select: () => undefined });
    pane.show();
    const text = pane.el.textContent ?? "";
    expect(text).toContain("size4.0 KiB in total, 1.0 KiB per rank");
    expect(text).toContain("placementDTensor Shard(0) on mesh (4,)");
    expect(text).toContain("callsnot called: fused fast path");
  });
});
