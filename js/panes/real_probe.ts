// "Run real probe": offered where a fake probe stopped at an op whose output depends on tensor
// values (the kernel's remedy "real", src/torchxray/_probe/failure.py), in the header next to the
// failure and in the Probe tab's banner. The mode stays real, so the probes after an Apply or Undo
// run real too (the mode menu shows it).
import { h } from "../dom";
import type { ProbeSummary } from "../protocol";
import type { Ctx } from "./context";

/** Whether the real probe is what would run the failed forward (and this view may run it). */
export function offersReal(p: ProbeSummary | undefined, readonly: boolean): boolean {
  return !readonly && p?.ok === false && !p.stale && p.error?.remedy === "real" && p.mode !== "real";
}

export function runRealProbe(ctx: Ctx): void {
  ctx.model.set("probe_mode", "real");
  ctx.model.save_changes();
  void ctx.run("probe", () => ctx.rpc.call({ kind: "probe", mode: "real" }));
}

export function realProbeButton(ctx: Ctx, cls: string, title = ""): HTMLButtonElement {
  const b = h("button", { type: "button", class: cls, title }, "Run real probe");
  b.addEventListener("click", () => runRealProbe(ctx));
  return b;
}
