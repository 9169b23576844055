// Runs of identical sibling blocks in the Probe table (a stage's blocks, 24 equal decoder layers)
// show as one row until opened, as the tree folds them. Identical: every module of the
// block has the same class, calls, shapes and status at the same relative path; times may differ.
// Single modules are not folded: the table lists blocks by name, and a run of them is what hides
// the rest of the table.

/** The fields of a probe row that decide whether two blocks are the same. */
export interface FoldableRow {
  path: string;
  cls: string;
  calls: number;
  inputs: string;
  outputs: string;
  status: string;
}

export interface ProbeFold<T> {
  fold: true;
  key: string; // the first block's path
  count: number;
  heads: T[]; // the blocks themselves, one per repeat
  rows: T[]; // every row of the run, blocks and their modules, in table order
  open: boolean;
}

export type ProbeLine<T> = T | ProbeFold<T>;

export function isProbeFold<T>(line: ProbeLine<T>): line is ProbeFold<T> {
  return (line as ProbeFold<T>).fold === true;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf(".");
  return i < 0 ? "" : path.slice(0, i);
}

/** Index after the last row of the block starting at `i` (rows come in pre-order). */
function blockEnd(rows: FoldableRow[], i: number): number {
  const prefix = `${rows[i].path}.`;
  let j = i + 1;
  while (j < rows.length && rows[j].path.startsWith(prefix)) j++;
  return j;
}

function signature(rows: FoldableRow[], start: number, end: number): string {
  const cut = rows[start].path.length;
  return rows
    .slice(start, end)
    .map((r) => [r.path.slice(cut), r.cls, r.calls, r.inputs, r.outputs, r.status].join("\u0000"))
    .join("\u0001");
}

/** The table's lines: rows, and folds for runs of two or more identical blocks. A fold whose key
 * is in `open` is followed by its rows. */
export function foldRuns<T extends FoldableRow>(rows: T[], open: ReadonlySet<string>): ProbeLine<T>[] {
  const out: ProbeLine<T>[] = [];
  let i = 0;
  while (i < rows.length) {
    const path = rows[i].path;
    const end = path === "" ? rows.length : blockEnd(rows, i);
    if (path !== "" && end - i > 1) {
      const sig = signature(rows, i, end);
      const heads = [rows[i]];
      let j = end;
      while (j < rows.length && rows[j].path !== "" && parentOf(rows[j].path) === parentOf(path)) {
        const next = blockEnd(rows, j);
        if (signature(rows, j, next) !== sig) break;
        heads.push(rows[j]);
        j = next;
      }
      if (heads.length > 1) {
        const run = rows.slice(i, j);
        const isOpen = open.has(path);
        out.push({ fold: true, key: path, count: heads.length, heads, rows: run, open: isOpen });
        if (isOpen) out.push(...run);
        i = j;
        continue;
      }
    }
    out.push(rows[i]);
    i += 1;
  }
  return out;
}
