// The head view's picture, as Painter calls: the screen canvas, the PNG and the
// SVG export all come from these.
import { hex, type ThemeColors } from "../colors";
import { imageLabel } from "../label_text";
import type { Painter } from "../paint/painter";
import type { Side } from "../tokens";
import { BUCKETS, COL_W, groupLines, ROW, rowY, visibleRows, type HeadLayout, type Lines } from "./head_lines";

/** One stroke per (opacity step, head), strongest drawn last (on top); opacity ≈ weight, as in bertviz. */
export function paintLines(p: Painter, lines: Lines, layout: HeadLayout, colors: readonly string[], heads: number): void {
  const start = groupLines(lines, heads);
  const { order, yq, yk } = lines;
  const width = lines.n > 1000 ? 1 : 1.5; // many lines: thinner, cheaper to rasterise and easier to read
  for (let g = 0; g < heads * BUCKETS; g++) {
    const from = start[g] as number, to = start[g + 1] as number;
    if (from === to) continue;
    const stroke = { color: colors[g % heads] ?? "#888", width, alpha: (Math.floor(g / heads) + 0.5) / BUCKETS };
    p.segments(stroke, (segment) => {
      for (let o = from; o < to; o++) {
        const i = order[o] as number;
        segment(layout.x0, yq[i] as number, layout.x1, yk[i] as number);
      }
    });
  }
}

/** Lines to keys above or below the visible rows end at the edge: say how many. */
export function paintOffscreenCounts(p: Painter, counts: { above: number; below: number }, layout: HeadLayout, theme: ThemeColors): void {
  const x = layout.x1 - 4, fill = hex(theme.muted);
  if (counts.above) p.text(x, 2, `▲ ${counts.above}`, fill, "right", "top");
  if (counts.below) p.text(x, layout.height - 2, `▼ ${counts.below}`, fill, "right", "bottom");
}

/** Characters of a label that fit in a token column (COL_W) at the views' font. */
const COLUMN_CHARS = 16;

/**
 * The token labels of the visible rows (on screen they are DOM rows; an image needs them drawn).
 * From `generatedFrom` on (a generation's output) labels are in the accent colour, under a rule.
 */
export function paintTokenLabels(
  p: Painter, layout: HeadLayout, sideQ: Side, sideK: Side, theme: ThemeColors, generatedFrom: number | null = null,
): void {
  const { first, last } = visibleRows(layout);
  const generated = (i: number): boolean => generatedFrom != null && i >= generatedFrom;
  const fill = (side: Side, i: number): string =>
    hex(side.kinds[i] !== "token" ? theme.muted : generated(i) ? theme.accent : theme.fg);
  if (generatedFrom != null && generatedFrom >= first && generatedFrom <= last) {
    const y = rowY(generatedFrom, layout.scrollTop) - ROW / 2;
    const rule = { color: hex(theme.muted), width: 2 };
    p.segments(rule, (segment) => {
      segment(0, y, COL_W, y);
      segment(layout.width - COL_W, y, layout.width, y);
    });
  }
  for (let i = first; i <= last; i++) {
    const y = rowY(i, layout.scrollTop);
    if (i < sideQ.labels.length) p.text(COL_W - 6, y, imageLabel(sideQ.labels[i] ?? "", COLUMN_CHARS), fill(sideQ, i), "right");
    if (i < sideK.labels.length) p.text(layout.width - COL_W + 6, y, imageLabel(sideK.labels[i] ?? "", COLUMN_CHARS), fill(sideK, i), "left");
  }
}
