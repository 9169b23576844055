// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { classCell, entries, lastName, pathCell, pathDepth, shapesCell } from "./probe_cells";

describe("the probe table's cells", () => {
  it("name a module by its last part at its depth, the whole path in its title and name", () => {
    expect([pathDepth(""), pathDepth("blocks"), pathDepth("blocks.0.0.conv_dw")]).toEqual([0, 1, 4]);
    expect([lastName(""), lastName("blocks.0.0.conv_dw")]).toEqual(["(model)", "conv_dw"]);
    const td = pathCell("blocks.0.0.conv_dw");
    expect(td.textContent).toBe("conv_dw");
    expect(td.getAttribute("aria-label")).toBe("blocks.0.0.conv_dw");
    expect(td.title).toMatch(/^blocks\.0\.0\.conv_dw /);
    expect((td.firstElementChild as HTMLElement).style.getPropertyValue("--tx-depth")).toBe("3");
    expect(pathCell("").getAttribute("aria-label")).toBe("(model)");
  });

  it("show one output whole, several as the first and +N more that opens and closes", () => {
    expect(entries("")).toEqual([]);
    expect(entries("logits: 1×10, past_key_values[0][0]: 1×4")).toEqual(["logits: 1×10", "past_key_values[0][0]: 1×4"]);
    const one = shapesCell("1×3×224×224");
    expect(one.textContent).toBe("1×3×224×224");
    expect(one.querySelector("[role=button]")).toBeNull();
    const text = "last_hidden_state: 1×16×128, past_key_values[0][0]: 1×2×16×32, past_key_values[0][1]: 1×2×16×32";
    const td = shapesCell(text);
    const tr = document.createElement("tr");
    let selected = 0;
    tr.addEventListener("click", () => selected++);
    tr.appendChild(td);
    expect(td.textContent).toBe("last_hidden_state: 1×16×128\u00a0+2 more");
    expect(td.title.split("\n")).toHaveLength(3);
    td.querySelector<HTMLElement>("[role=button]")!.click();
    expect(td.textContent).toBe(`${text.replaceAll(", ", "")}\u00a0less`);
    expect(td.querySelectorAll("br")).toHaveLength(2);
    expect(td.querySelector<HTMLElement>("[role=button]")!.getAttribute("aria-expanded")).toBe("true");
    td.querySelector<HTMLElement>("[role=button]")!.click();
    expect(td.textContent).toBe("last_hidden_state: 1×16×128\u00a0+2 more");
    td.querySelector<HTMLElement>("[role=button]")!.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    expect(td.textContent).toContain("less");
    expect(selected).toBe(0); // opening the list does not select the row's module
  });

  it("break a class name between its words only", () => {
    const td = classCell("LlamaRotaryEmbedding");
    expect(td.textContent).toBe("LlamaRotaryEmbedding");
    expect(td.innerHTML).toBe("Llama<wbr>Rotary<wbr>Embedding");
    expect(classCell("BatchNormAct2d").innerHTML).toBe("Batch<wbr>Norm<wbr>Act2d");
    expect(classCell("GELU").innerHTML).toBe("GELU");
    expect(classCell("<b>X</b>").querySelector("b")).toBeNull();
  });
});
