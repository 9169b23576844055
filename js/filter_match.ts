// The tree filter as the kernel reads it (src/torchxray/_view/serialize.py: `matcher`, `matching`,
// `filter_rows`), for the saved view, which filters in the browser: one query matches the same
// modules live and saved. A substring is compared lower-cased on both sides; a regex is Python's
// `re` (case-insensitive, searched), rewritten here into a JavaScript RegExp ("iu") wherever the two
// dialects read a construct differently, and refused with a reason where JavaScript has no
// equivalent. js/filter_cases.json holds the cases both sides check (vitest and pytest).
import type { FilterResult, NodeRow } from "./protocol";

export class FilterSyntaxError extends Error {}

// Python's classes on str patterns: \w is str.isalnum() or "_", \d is category Nd, \s is
// str.isspace(). JavaScript's (ASCII \w and \d, another set of spaces) differ off ASCII.
const WORD = "\\p{L}\\p{N}_";
const DIGIT = "\\p{Nd}";
const SPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const BOUNDARY = `(?:(?<=[${WORD}])(?![${WORD}])|(?<![${WORD}])(?=[${WORD}]))`;
const NOT_BOUNDARY = `(?:(?<=[${WORD}])(?=[${WORD}])|(?<![${WORD}])(?![${WORD}]))`;

const refuse = (what: string): never => {
  throw new FilterSyntaxError(`the saved view cannot read ${what} (the live view with a kernel can)`);
};
const bad = (why: string): never => {
  throw new FilterSyntaxError(why);
};

/** A literal character, escaped for a "u" RegExp (which refuses needless escapes). */
function literal(ch: string): string {
  return /^[\p{L}\p{N}_ ]$/u.test(ch) ? ch : `\\u{${ch.codePointAt(0)!.toString(16)}}`;
}

/** Python's `re` pattern (searched case-insensitively) as a JavaScript RegExp that matches the
 * same texts. Throws FilterSyntaxError for what Python refuses or JavaScript cannot express. */
export function pythonRegex(pattern: string): RegExp {
  const p = [...pattern]; // by code point
  let i = 0;
  const advance = (text: string) => {
    i += [...text].length;
  };
  const flags = { m: false, s: false, x: false };
  // Global flags, which Python takes at the start only: i (always on here), m, s, x, u.
  for (let m; (m = /^\(\?([a-zA-Z]+)\)/.exec(p.slice(i).join(""))); advance(m[0])) {
    for (const f of m[1]) {
      if (f === "m" || f === "s" || f === "x") flags[f] = true;
      else if (f === "a") refuse("the ASCII flag (?a)");
      else if (f !== "i" && f !== "u") bad(`unknown flag ${f}`);
    }
  }
  const hex = (n: number) => {
    const h = p.slice(i, i + n).join("");
    if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) bad(`incomplete escape at position ${i}`);
    i += n;
    return `\\u{${parseInt(h, 16).toString(16)}}`;
  };
  const octal = (first: string) => {
    let digits = first;
    while (digits.length < 3 && /[0-7]/.test(p[i] ?? "")) digits += p[i++];
    return `\\u{${parseInt(digits, 8).toString(16)}}`;
  };
  // One escape, the backslash and its letter consumed; `inClass`: inside [...].
  const escape = (inClass: boolean): string => {
    const e = p[i++];
    if (e === undefined) return bad("bad escape (end of pattern)");
    const shared: Record<string, string> = { d: DIGIT, D: "\\P{Nd}", n: "\\n", t: "\\t", r: "\\r", f: "\\f", v: "\\v", a: "\\x07" };
    if (e in shared) return shared[e];
    if (e === "w") return inClass ? WORD : `[${WORD}]`;
    if (e === "s") return inClass ? SPACE : `[${SPACE}]`;
    if (e === "W" || e === "S") return inClass ? refuse(`\\${e} inside [...]`) : `[^${e === "W" ? WORD : SPACE}]`;
    if (e === "x") return hex(2);
    if (e === "u") return hex(4);
    if (e === "U") return hex(8);
    if (e === "N") return refuse("\\N{...}");
    if (inClass && e === "b") return "\\u{8}";
    if (!inClass && e === "b") return BOUNDARY;
    if (!inClass && e === "B") return NOT_BOUNDARY;
    if (!inClass && e === "A") return "^";
    if (!inClass && e === "Z") return "$";
    if (e === "0" || (inClass && /[1-7]/.test(e))) return octal(e);
    if (/[1-9]/.test(e)) {
      // Python: three octal digits are a character, else one or two digits a group reference.
      if (/[0-7]/.test(e) && /[0-7]/.test(p[i] ?? "") && /[0-7]/.test(p[i + 1] ?? "")) return octal(e);
      const ref = /[0-9]/.test(p[i] ?? "") ? e + p[i++] : e;
      return `\\${ref}`;
    }
    if (/[A-Za-z0-9]/.test(e)) return bad(`bad escape \\${e}`);
    return literal(e); // any other character escaped stands for itself
  };
  const charClass = (): string => {
    let out = "[";
    if (p[i] === "^") {
      out += "^";
      i++;
    }
    for (let first = true; p[i] !== "]" || first; first = false) {
      const c = p[i++];
      if (c === undefined) bad("unterminated character set");
      else if (c === "\\") out += escape(true);
      else if (c === "-") out += "-";
      else out += literal(c);
    }
    i++;
    return out + "]";
  };
  const group = (): string => {
    if (p[i] !== "?") return "(";
    const rest = p.slice(i).join("");
    const simple = /^\?(?::|=|!|<=|<!)/.exec(rest);
    if (simple) {
      advance(simple[0]);
      return `(${simple[0]}`;
    }
    const named = /^\?P<([\p{L}_][\p{L}\p{N}_]*)>/u.exec(rest);
    if (named) {
      advance(named[0]);
      return `(?<${named[1]}>`;
    }
    const ref = /^\?P=([\p{L}_][\p{L}\p{N}_]*)\)/u.exec(rest);
    if (ref) {
      advance(ref[0]);
      return `\\k<${ref[1]}>`;
    }
    if (rest.startsWith("?#")) {
      const end = rest.indexOf(")");
      if (end < 0) bad("missing ), unterminated comment");
      advance(rest.slice(0, end + 1));
      return "";
    }
    if (/^\?[a-zA-Z]+\)/.test(rest)) return bad("global flags not at the start of the expression");
    if (/^\?-?[a-zA-Z]+(?:-[a-zA-Z]+)?:/.test(rest)) return refuse("flags scoped to a group (?i:...)");
    if (rest.startsWith("?>")) return refuse("atomic groups (?>...)");
    if (rest.startsWith("?(")) return refuse("conditional groups (?(...)...)");
    return bad(`unknown extension ${rest.slice(0, 3)}`);
  };
  const quantifierTail = (): string => {
    if (p[i] === "?") {
      i++;
      return "?";
    }
    if (p[i] === "+") refuse("possessive quantifiers (*+, ++, ?+)");
    return "";
  };

  let out = "";
  while (i < p.length) {
    const c = p[i++];
    if (flags.x && new RegExp(`^[${SPACE}]$`, "u").test(c)) continue;
    if (flags.x && c === "#") {
      while (i < p.length && p[i] !== "\n") i++;
      continue;
    }
    if (c === "\\") out += escape(false);
    else if (c === "[") out += charClass();
    else if (c === "(") out += group();
    else if (c === ")" || c === "|") out += c;
    else if (c === ".") out += flags.s ? "[^]" : "[^\\n]";
    else if (c === "^") out += flags.m ? "(?<=^|\\n)" : "^";
    // Python's $ also matches before a newline that ends the text.
    else if (c === "$") out += flags.m ? "(?=\\n|$)" : "(?=\\n?$)";
    else if (c === "*" || c === "+" || c === "?") out += c + quantifierTail();
    else if (c === "{") {
      // A quantifier {m}, {m,}, {,n} (from 0), {m,n}; anything else is a literal brace.
      const q = /^(\d*)(?:,(\d*))?\}/.exec(p.slice(i).join(""));
      if (!q || (q[1] === "" && q[2] === undefined)) {
        out += literal(c);
        continue;
      }
      advance(q[0]);
      const lo = q[1] || "0";
      const hi = q[2] === undefined ? lo : q[2];
      out += `{${lo},${hi}}` + quantifierTail();
    } else out += literal(c);
  }
  try {
    return new RegExp(out, "iu");
  } catch (e) {
    return bad((e as Error).message);
  }
}

/** The filter's test of one text: a case-insensitive substring, or a regex searched. */
export function filterTest(query: string, regex: boolean): (text: string) => boolean {
  if (regex) {
    const re = pythonRegex(query);
    return (text) => re.test(text);
  }
  const q = query.toLowerCase();
  return (text) => text.toLowerCase().includes(q);
}

/** The rows a filter shows (`serialize.filter_rows`): the matches, in the path or the class or,
 * with `names`, in the module's own name only (the root has none), with their ancestors. */
export function filterRows(nodes: readonly NodeRow[], query: string, regex: boolean, names: boolean): FilterResult {
  const test = filterTest(query, regex);
  const keep = new Map<string, boolean>();
  let count = 0;
  for (const n of nodes) {
    const hit = names ? n.path !== "" && test(n.name) : test(n.path) || test(n.cls);
    if (!hit) continue;
    count += 1;
    keep.set(n.path, true);
    const parts = n.path ? n.path.split(".") : [];
    for (let i = 0; i < parts.length; i++) {
      const a = parts.slice(0, i).join(".");
      if (!keep.has(a)) keep.set(a, false);
    }
  }
  const rows = nodes.filter((n) => keep.has(n.path)).map((n) => ({ ...n, match: keep.get(n.path) }));
  return { count, rows, truncated: false };
}
