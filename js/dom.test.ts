// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { breakable, breakablePath } from "./dom";

function html(nodes: Node[]): string {
  const el = document.createElement("div");
  el.append(...nodes);
  return el.innerHTML;
}

describe("line breaks in shapes and paths", () => {
  it("breaks a shape list between entries and after a name's space, never inside a shape", () => {
    const nodes = breakable("logits: 1×10, past_key_values[0][0]: 1×4");
    const el = document.createElement("div");
    el.append(...nodes);
    expect(el.textContent).toBe("logits: 1×10, past_key_values[0][0]: 1×4");
    expect([...el.querySelectorAll(".tx-nobr")].map((s) => s.textContent)).toEqual([
      "logits:", "1×10,", "past_key_values[0]", "[0]:", "1×4",
    ]);
    expect(html(breakable("1×3×224×224, 1×8"))).toBe(
      '<span class="tx-nobr">1×3×224×224,</span> <wbr><span class="tx-nobr">1×8</span>',
    );
  });

  it("breaks a path only after its dots", () => {
    expect(html(breakablePath("backbone.body.0"))).toBe("backbone.<wbr>body.<wbr>0");
    expect(html(breakablePath("(model)"))).toBe("(model)");
  });
});
