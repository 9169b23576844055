// What every pane gets from the widget: the RPC channel, the synced model and a way to run an
// action with a busy state and error reporting that always ends (finally), so the view never sticks.
import type { Channel, Model } from "../protocol";

export interface Ctx {
  rpc: Channel;
  model: Model;
  readonly: boolean;
  /** Runs an action; shows busy while it runs and reports its error. Resolves undefined on error. */
  run<T>(label: string, fn: () => Promise<T>): Promise<T | undefined>;
  error(message: string): void;
  select(path: string): void;
  /** Opens the Source tab on `path`'s class (or `cls` of its MRO) with `line` marked. */
  openSource?(path: string, cls: string | null, line: number): void;
}

export interface Pane {
  readonly el: HTMLElement;
  /** Called when the tab becomes visible or the selection/state changes while it is visible. */
  show(): void | Promise<void>;
  /** Called when the selection changes, even while the tab is hidden: drop what the person typed
   * for the module before (a draft belongs to one module and one form). */
  selectionChanged?(): void;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The revision of the model's last change (a probe alone does not move it), for panes whose
 * content follows the model only: a form typed into is not rebuilt when a probe's results land. */
export function modelRev(ctx: Ctx): number | undefined {
  const state = ctx.model.get("tree_state");
  return state?.model_rev ?? state?.rev;
}
