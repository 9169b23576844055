// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import { FakeModel, flush } from "../fake_model";
import type { Ctx } from "./context";
import { SummaryTools, csvName } from "./summary";

const REPLY = { kind: "summary", text: "Net: 2 modules; probe ok (fake)\n===\nNet  [2, 3]  --", csv: "path,name\n,\nfc,fc\n", depth: 1, deepest: 1, name: "Net" };

function tools(readonly = false) {
  const asked: unknown[] = [];
  const ctx = {
    rpc: { connected: true, call: async (msg: unknown) => (asked.push(msg), REPLY) },
    model: new FakeModel({}),
    readonly,
    run: async (_l: string, fn: () => Promise<unknown>) => fn(),
    error: () => undefined,
    select: () => undefined,
  } as unknown as Ctx;
  const t = new SummaryTools(ctx);
  document.body.appendChild(t.el);
  const button = (name: string) => [...t.el.querySelectorAll("button")].find((b) => b.textContent === name)!;
  return { t, asked, button };
}

afterEach(() => {
  document.body.innerHTML = "";
  vi.unstubAllGlobals();
});

describe("the summary tools", () => {
  it("copy the kernel's text at the chosen depth", async () => {
    const written: string[] = [];
    vi.stubGlobal("navigator", { clipboard: { writeText: async (s: string) => void written.push(s) } });
    const { t, asked, button } = tools();
    const depth = t.el.querySelector("select")!;
    depth.value = "3";
    button("Copy summary").click();
    await flush();
    expect(asked).toEqual([{ kind: "summary", depth: 3 }]);
    expect(written).toEqual([REPLY.text]);
    expect(t.el.textContent).toContain("copied 3 lines (depth 1 of 1)");
    depth.value = "auto";
    button("Copy summary").click();
    await flush();
    expect(asked[1]).toEqual({ kind: "summary", depth: null });
  });

  it("download the CSV under the model's name and show the text on demand", async () => {
    const urls: Blob[] = [];
    const clicked: string[] = [];
    URL.createObjectURL = ((b: Blob) => (urls.push(b), "blob:csv")) as never;
    URL.revokeObjectURL = (() => undefined) as never;
    const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push(this.getAttribute("download") ?? "");
    });
    const { t, button } = tools();
    button("Download CSV").click();
    await flush();
    expect(clicked).toEqual(["Net-summary.csv"]);
    expect(await urls[0].text()).toBe(REPLY.csv);
    expect(t.el.querySelector("a")).toBeNull(); // the link was temporary
    click.mockRestore();
    const show = button("Show summary");
    show.click();
    await flush();
    // Text not in torchinfo's layout is shown as it is (summary_table.test.ts: the table).
    expect(t.el.querySelector<HTMLElement>("[aria-label='summary text']")!.hidden).toBe(false);
    expect(t.el.querySelector("pre")!.textContent).toBe(REPLY.text);
    expect(show.getAttribute("aria-expanded")).toBe("true");
  });

  it("is disabled in a read-only view, and names files safely", () => {
    const { t } = tools(true);
    expect([...t.el.querySelectorAll("button")].every((b) => b.disabled)).toBe(true);
    expect(csvName("My Net/v2")).toBe("My_Net_v2-summary.csv");
  });
});
