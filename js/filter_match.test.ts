import { describe, expect, it } from "vitest";
import table from "./filter_cases.json";
import { FilterSyntaxError, filterRows, pythonRegex } from "./filter_match";
import type { NodeRow } from "./protocol";
import { SnapshotRpc } from "./snapshot";

// The same table tests/test_filter_cases.py checks against the kernel's filter.
const nodes: NodeRow[] = table.nodes.map(([path, cls]) => ({
  path,
  name: path.split(".").pop() ?? "",
  cls,
  nkids: 0,
  depth: path ? path.split(".").length : 0,
}));

interface Case {
  query: string;
  regex: boolean;
  names?: boolean;
  match?: string[];
  error?: boolean;
  saved_refuses?: boolean;
}

describe("the saved view's filter reads a query as the kernel does", () => {
  for (const c of table.cases as Case[]) {
    it(`${c.regex ? "regex" : "substring"}${c.names ? " (names)" : ""} ${JSON.stringify(c.query)}`, () => {
      const run = () => filterRows(nodes, c.query, c.regex, Boolean(c.names));
      if (c.error || c.saved_refuses) {
        expect(run).toThrow(FilterSyntaxError);
        if (c.saved_refuses) expect(run).toThrow(/the saved view cannot read/);
        return;
      }
      expect(run().rows.filter((r) => r.match).map((r) => r.path)).toEqual(c.match);
    });
  }

  it("keeps each match's ancestors, unmarked, as the kernel does", () => {
    const r = filterRows(nodes, "attn", false, false);
    expect(r.count).toBe(2);
    expect(r.rows.map((x) => [x.path, x.match])).toEqual([
      ["", false], ["blocks", false], ["blocks.0", false], ["blocks.0.attn", true], ["blocks.1", false], ["blocks.1.attn", true],
    ]);
  });

  it("builds a RegExp a browser accepts for every case the kernel and the saved view share", () => {
    for (const c of table.cases as Case[]) {
      if (c.regex && !c.error && !c.saved_refuses) expect(pythonRegex(c.query)).toBeInstanceOf(RegExp);
    }
  });

  it("answers the filter request of a saved view with the reason it refuses one", async () => {
    const rpc = new SnapshotRpc({ nodes });
    await expect(rpc.call({ kind: "filter", query: "(?>po)ol", regex: true })).rejects.toThrow(
      "bad regular expression: the saved view cannot read atomic groups",
    );
    expect((await rpc.call({ kind: "filter", query: "\\d$", regex: true })).count).toBe(4);
  });
});
