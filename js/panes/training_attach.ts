// The Training tab fed by a training job (tx.explore(model, attach=job) / tx.explore(job)): the
// job's header (where it runs, its ranks, "job ended at step N"), the rank selector with its
// "worst rank" view, a module's last figures on every rank, and the poller: a timer here asks the
// kernel for what is new (train_poll) every poll_ms, one request at a time, so that nothing in the
// kernel runs between polls. Mirrors _view/attach_view.py.
import { h } from "../dom";
import type { AttachedState, RankLatest, TrainPollReply } from "../protocol";
import type { Ctx } from "./context";

const WORST = "worst";
const SLOW_FACTOR = 4; // a poll that failed waits this many periods before the next

function short(x: number): string {
  const a = Math.abs(x);
  if (a === 0) return "0";
  if (a < 1e-3 || a >= 1e4) return x.toExponential(2);
  return x.toPrecision(3);
}

/** The header's line: where the job runs, its ranks and steps, or that it ended. */
export function attachedLine(a: AttachedState, step: number, every: number): string {
  const where = `attached to ${a.address} · ${a.ranks.length}/${a.world} ranks`;
  if (a.ended) return `${where} · job ended ${a.ended_exactly ? "at" : "after"} step ${a.ended_at}${a.ended_exactly ? "" : " (last seen)"}`;
  return `${where} · step ${step} · sampled every ${every}`;
}

/** The rank selector: the worst-rank view first, then each rank (the worst one named). */
export function rankSelect(a: AttachedState, onPick: (rank: number | null) => void): HTMLSelectElement {
  const select = h("select", { class: "tx-train-rank", "aria-label": "rank shown" });
  const worst = a.worst === null ? "worst rank (none flagged)" : `worst rank (rank ${a.worst})`;
  select.append(h("option", { value: WORST }, worst));
  for (const r of a.ranks) {
    const state = a.states[String(r)] ?? "live";
    const note = state === "live" ? "" : ` (${state === "gone" ? "ended" : state})`;
    select.append(h("option", { value: String(r) }, `rank ${r}${note}`));
  }
  select.value = a.rank === null ? WORST : String(a.rank);
  select.addEventListener("change", () => onPick(select.value === WORST ? null : Number(select.value)));
  return select;
}

/** A module's last figures on every rank (the worst-rank view's "which rank is off?"). */
export function rankTable(ranks: readonly RankLatest[], shown: number | undefined): HTMLTableElement {
  const table = h("table", { class: "tx-table tx-train-ranks", "aria-label": "last figures per rank" });
  const cols = [["grad_norm", "grad norm"], ["update_ratio", "update ratio"], ["act_std", "act std"], ["act_zeros", "zeros"]] as const;
  table.append(h("tr", {}, h("th", {}, "rank"), ...cols.map(([, label]) => h("th", {}, label))));
  for (const row of ranks) {
    const cells = cols.map(([key]) => {
      const v = row[key];
      if (row.nonfinite.includes(key)) return h("td", { class: "tx-num tx-bad" }, "NaN/Inf");
      return h("td", { class: "tx-num" }, v === null || v === undefined ? "—" : short(v));
    });
    table.append(h("tr", { class: row.rank === shown ? "tx-train-shown" : "" }, h("td", {}, String(row.rank)), ...cells));
  }
  return table;
}

/** Asks the kernel for the job's news every poll_ms while attached and not ended. */
export class AttachPoller {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inFlight = false;
  private stopped = true;
  private period = 500;
  rank: number | null = null;
  message = "";

  constructor(
    private readonly ctx: Ctx,
    private readonly onMessage: (message: string) => void,
    private readonly alive: () => boolean = () => true,
  ) {}

  /** Follow the synced state: polls while the job runs, stops once it ended. */
  follow(a: AttachedState | undefined): void {
    if (!a || a.ended || this.ctx.readonly) {
      this.stop();
      return;
    }
    this.rank = a.rank;
    this.period = a.poll_ms;
    if (this.stopped) {
      this.stopped = false;
      this.schedule(this.period);
    }
  }

  /** Show another rank: asked at once (the kernel polls and sends the state for that rank). */
  pick(rank: number | null): void {
    this.rank = rank;
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(), ms);
  }

  private async poll(): Promise<void> {
    if (!this.alive()) {
      this.stop();
      return;
    }
    if (this.inFlight) return; // one request at a time: a busy kernel is not asked twice
    this.inFlight = true;
    let next = this.period;
    try {
      const r: TrainPollReply = await this.ctx.rpc.call({ kind: "train_poll", rank: this.rank }, 15_000);
      this.message = r.message;
      if (r.ended) this.stopped = true;
    } catch (e) {
      this.message = `poll failed: ${e instanceof Error ? e.message : String(e)}`;
      next = this.period * SLOW_FACTOR;
    } finally {
      this.inFlight = false;
    }
    this.onMessage(this.message);
    this.schedule(next);
  }
}
