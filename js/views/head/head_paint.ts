// The head view's picture, as Painter calls: the screen canvas, the PNG and the
// SVG export all come from these.
import { hex, type ThemeColors } from "../../colors";
import { imageLabel } from "../../label_text";
import type { Painter } from "../../paint/painter";
import type { Side } from "../../tokens";
import { lineAlpha } from "./head_scale";
import { BUCKETS, COL_W, groupLines, lineWidth, ROW, rowY, visibleRows, type HeadLayout, type Lines } from "./head_lines";

/**
 * One stroke per (opacity step, head), strongest drawn last (on top); opacity ≈
 * weight, as in bertviz, or weight^`fade` (head_scale.ts `logFade`: many heads on the log scale).
 */
export function paintLines(p: Painter, lines: Lines, layout: HeadLayout, colors: readonly string[], heads: number, offsets?: Float32Array, fade = 1): void {
  const start = groupLines(lines, heads);
  const { order, yq, yk } = lines;
  const width = lineWidth(lines.n);
  for (let g = 0; g < heads * BUCKETS; g++) {
    const from = start[g] as number, to = start[g + 1] as number;
    if (from === to) continue;
    const stroke = { color: colors[g % heads] ?? "#888", width, alpha: lineAlpha((Math.floor(g / heads) + 0.5) / BUCKETS, fade) };
    const dy = offsets?.[g % heads] ?? 0;
    p.segments(stroke, (segment) => {
      for (let o = from; o < to; o++) {
        const i = order[o] as number;
        segment(layout.x0, (yq[i] as number) + dy, layout.x1, (yk[i] as number) + dy);
      }
    });
  }
}

/** Lines to keys above or below the visible rows end at the edge: say how many. */
export function paintOffscreenCounts(p: Painter, counts: { above: number; below: number }, layout: HeadLayout, theme: ThemeColors): void {
  const x = layout.x1 - 4, fill = hex(theme.muted);
  if (counts.above) p.text(x, 2, `▲ ${counts.above} ${counts.above === 1 ? "line" : "lines"} to keys above`, fill, "right", "top");
  if (counts.below) p.text(x, layout.height - 2, `▼ ${counts.below} ${counts.below === 1 ? "line" : "lines"} to keys below`, fill, "right", "bottom");
}

/** Characters of a label that fit in a token column (COL_W) at the views' font. */
const COLUMN_CHARS = 16;
/** Height of the caption under an exported head view. */
export const CAPTION_H = 20;

/**
 * The token labels of the visible rows (on screen they are DOM rows; an image
 * needs them drawn), with what the screen marks: the locked query and key
 * highlighted, the rule between sentence A and B, and from `generatedFrom` on
 * (a generation's output) labels in the accent colour, under a rule.
 */
export function paintTokenLabels(
  p: Painter, layout: HeadLayout, sideQ: Side, sideK: Side, theme: ThemeColors, generatedFrom: number | null = null,
  selected: { query: number | null; key: number | null } = { query: null, key: null },
): void {
  const { first, last } = visibleRows(layout);
  const generated = (i: number): boolean => generatedFrom != null && i >= generatedFrom;
  const fill = (side: Side, i: number): string =>
    hex(side.kinds[i] !== "token" ? theme.muted : generated(i) ? theme.accent : theme.fg);
  const rule = { color: hex(theme.muted), width: 2 };
  if (generatedFrom != null && generatedFrom >= first && generatedFrom <= last) {
    const y = rowY(generatedFrom, layout.scrollTop) - ROW / 2;
    p.segments(rule, (segment) => {
      segment(0, y, COL_W, y);
      segment(layout.width - COL_W, y, layout.width, y);
    });
  }
  const xK = layout.width - COL_W;
  const column = (side: Side, i: number, y: number, x0: number, on: boolean, align: "left" | "right"): void => {
    if (on) p.rect(x0, y - ROW / 2, COL_W, ROW, hex(theme.accent));
    if (side.segments && i > 0 && side.segments[i] !== side.segments[i - 1]) {
      p.segments(rule, (seg) => seg(x0, y - ROW / 2 + 1, x0 + COL_W, y - ROW / 2 + 1));
    }
    const x = align === "right" ? x0 + COL_W - 6 : x0 + 6;
    p.text(x, y, imageLabel(side.labels[i] ?? "", COLUMN_CHARS), on ? hex(theme.bg) : fill(side, i), align);
  };
  for (let i = first; i <= last; i++) {
    const y = rowY(i, layout.scrollTop);
    if (i < sideQ.labels.length) column(sideQ, i, y, 0, selected.query === i, "right");
    if (i < sideK.labels.length) column(sideK, i, y, xK, selected.key === i, "left");
  }
}

/** The caption line under an exported picture (model, layer, heads, query). */
export function paintCaption(p: Painter, layout: HeadLayout, caption: string, theme: ThemeColors): void {
  p.text(6, layout.height + CAPTION_H / 2, caption, hex(theme.muted), "left");
}
