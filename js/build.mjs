// Bundles the widget (js/widget.ts -> src/torchxray/static/widget.js + widget.css) and, separately,
// the Graphviz renderer (static/viz.js). anywidget loads the ESM from a blob: URL, so a relative
// dynamic import of a chunk cannot resolve; the kernel sends viz.js on request instead (see
// protocol "asset") and the widget imports it from a blob of its own.
import { build } from "esbuild";
import { copyFile, mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "src", "torchxray", "static");
await mkdir(out, { recursive: true });

await build({
  entryPoints: [join(here, "widget.ts")],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  outfile: join(out, "widget.js"),
  logLevel: "warning",
});
await build({
  entryPoints: [join(here, "styles.css")],
  bundle: true,
  minify: true,
  outfile: join(out, "widget.css"),
  logLevel: "warning",
});
// viz.js is already a minified self-contained ESM (the WASM is inlined); copying keeps its licence
// header intact.
await copyFile(join(here, "..", "node_modules", "@viz-js", "viz", "dist", "viz.js"), join(out, "viz.js"));

for (const f of ["widget.js", "widget.css", "viz.js"]) {
  const s = await stat(join(out, f));
  console.log(`${f}: ${(s.size / 1024).toFixed(1)} KB`);
}
