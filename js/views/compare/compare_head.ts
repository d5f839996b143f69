// The head view of A − B: a line per (head, query, key) whose weight changed,
// red where A attends more, blue where B does, opacity by the size of the change
// relative to the largest one drawn.
import { hex, type ThemeColors } from "../../colors";
import type { Painter } from "../../paint/painter";
import { h } from "../common";
import { BUCKETS, bucketOf, type HeadLayout, type Lines } from "../head/head_lines";

/** One stroke per (opacity step, sign), the largest changes drawn last (on top). */
export function paintSignedLines(p: Painter, lines: Lines, layout: HeadLayout, theme: ThemeColors): void {
  const { n, w, yq, yk } = lines;
  let max = 0;
  for (let i = 0; i < n; i++) max = Math.max(max, Math.abs(w[i] as number));
  if (!(max > 0)) return;
  // group = step × 2 + (A more ? 1 : 0); empty groups are not stroked.
  const group = new Uint8Array(n);
  const used = new Uint8Array(BUCKETS * 2);
  for (let i = 0; i < n; i++) {
    const v = w[i] as number;
    const g = bucketOf(Math.abs(v) / max) * 2 + (v > 0 ? 1 : 0);
    group[i] = g;
    used[g] = 1;
  }
  const width = n > 1000 ? 1 : 1.5;
  for (let g = 0; g < BUCKETS * 2; g++) {
    if (!used[g]) continue;
    const stroke = { color: hex(g % 2 ? theme.pos : theme.neg), width, alpha: (Math.floor(g / 2) + 0.5) / BUCKETS };
    p.segments(stroke, (segment) => {
      for (let i = 0; i < n; i++) if (group[i] === g) segment(layout.x0, yq[i] as number, layout.x1, yk[i] as number);
    });
  }
}

/** What the colours of A − B mean, in the theme's own colours. */
export function diffLegend(): HTMLElement {
  const box = h("span", "attnscope-legend", { "data-testid": "diff-legend" });
  const swatch = (cls: string): HTMLElement => h("i", `attnscope-legend-swatch ${cls}`, { "aria-hidden": "true" });
  box.append(swatch("is-pos"), "A attends more ", swatch("is-neg"), "B attends more · opacity: size of the change");
  return box;
}
