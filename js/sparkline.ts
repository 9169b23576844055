// A row's sparkline: the last samples of a figure as a tiny polyline (an attached job's rows in
// the tree, tree_color.ts), built with DOM calls (no markup parsed).
import { SVG_NS, svgChart } from "./dom";

export const SPARK_W = 48;
export const SPARK_H = 12;

export function sparkline(values: readonly number[], log: boolean, label: string): SVGSVGElement {
  const svg = svgChart("tx-spark", SPARK_W, SPARK_H, label);
  const ys = values.map((v) => (log ? Math.log10(Math.max(v, 1e-30)) : v));
  if (ys.length > 1) {
    const lo = Math.min(...ys);
    const hi = Math.max(...ys);
    const step = (SPARK_W - 2) / (ys.length - 1);
    const y = (v: number) => (hi > lo ? SPARK_H - 1 - ((v - lo) / (hi - lo)) * (SPARK_H - 2) : SPARK_H / 2);
    const line = document.createElementNS(SVG_NS, "polyline");
    line.setAttribute("points", ys.map((v, i) => `${(1 + i * step).toFixed(1)},${y(v).toFixed(1)}`).join(" "));
    svg.appendChild(line);
  }
  return svg;
}
