// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { hideStandIn } from "./host";

/** A cell's outputs as a host lays them out: the widget's output, then the stand-in's. */
function outputs(html: string): HTMLElement {
  const box = document.createElement("div");
  box.innerHTML = html;
  document.body.replaceChildren(box);
  return box.querySelector<HTMLElement>("#widget")!;
}

describe("hideStandIn", () => {
  it("hides the stand-in in the next output, whatever the host's classes (VS Code's)", () => {
    const el = outputs(`
      <div class="output_container">
        <div class="output"><div class="widget-view"><div id="widget"></div></div></div>
        <div class="output"><div class="output_html"><div class="tx-static">tree</div></div></div>
      </div>`);
    const stand = hideStandIn(el);
    expect(stand?.textContent).toBe("tree");
    expect(stand?.style.display).toBe("none");
  });

  it("leaves anything else alone: another output, another widget's stand-in, no next output", () => {
    const other = outputs(`
      <div><div class="output"><div id="widget"></div></div><div class="output"><pre>print</pre></div></div>
      <div><div class="tx-static">another cell's</div></div>`);
    expect(hideStandIn(other)).toBeNull();
    expect(document.querySelector<HTMLElement>(".tx-static")!.style.display).toBe("");
    const widget = outputs(`
      <div class="output"><div id="widget"></div></div>
      <div class="output"><div class="tx-root"></div><div class="tx-static">its own</div></div>`);
    expect(hideStandIn(widget)).toBeNull();
    expect(hideStandIn(outputs(`<div><div id="widget"></div></div>`))).toBeNull();
  });
});
