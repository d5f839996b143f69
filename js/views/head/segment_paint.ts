// The head view's segments picture as Painter calls: the screen canvas, the PNG
// and the SVG export all come from these (js/paint/), so an export of segment
// rows (sentences, turns, collapsed images) is what the panel shows.
import { hex, mix, type ThemeColors } from "../../colors";
import { imageLabel } from "../../label_text";
import type { Painter } from "../../paint/painter";
import type { SegmentsMeta } from "../../wire/types";
import {
  SEGMENT_ROW, segmentKeyWeights, segmentLines, segmentY, type SegmentFocus, type SegmentLayout,
} from "./segment_geometry";
import { exportCaption } from "./head_scale";

/** Width of a segment line, CSS pixels. */
const LINE_W = 1.5;
/** How much of the accent a key bar has over the background. */
const BAR_MIX = 0.35;

export interface SegmentPaint {
  /** The lines drawn. */
  lines: number;
  /** Per key segment, the focused query segment's bar (null: no query focused). */
  bars: Float32Array | null;
}

/**
 * Lines (one per head and segment pair, opacity = mass, faint first) and the
 * focused query segment's key bars, behind where the key labels sit.
 */
export function paintSegmentLines(
  p: Painter, g: SegmentLayout, mass: Float32Array, count: number, heads: readonly number[],
  focus: SegmentFocus, colors: readonly string[], theme: ThemeColors,
): SegmentPaint {
  const bars = segmentKeyWeights(mass, count, heads, focus);
  if (bars) {
    const fill = hex(mix(theme.bg, theme.accent, BAR_MIX));
    for (let b = 0; b < count; b++) {
      const w = bars[b] as number;
      if (w > 0) p.rect(g.x1, b * SEGMENT_ROW + 2, w * g.colW, SEGMENT_ROW - 4, fill);
    }
  }
  const lines = segmentLines(mass, count, heads, focus);
  for (const line of lines) {
    const stroke = { color: colors[line.head] ?? hex(theme.fg), width: LINE_W, alpha: line.w };
    p.segments(stroke, (segment) => segment(g.x0, segmentY(line.a), g.x1, segmentY(line.b)));
  }
  return { lines: lines.length, bars };
}

/** Characters of a segment label an exported picture keeps (the screen cuts by width). */
const LABEL_CHARS = 36;

/** The labels the screen shows as DOM rows, drawn (for an exported picture); the focused one highlighted. */
export function paintSegmentLabels(p: Painter, g: SegmentLayout, labels: readonly string[], focus: SegmentFocus, theme: ThemeColors): void {
  const chars = Math.max(4, Math.min(LABEL_CHARS, Math.floor(g.colW / 6.5)));
  labels.forEach((text, i) => {
    const y = segmentY(i);
    for (const side of ["query", "key"] as const) {
      const on = focus?.side === side && focus.i === i;
      const x0 = side === "query" ? 0 : g.x1;
      if (on) p.rect(x0, i * SEGMENT_ROW, g.colW, SEGMENT_ROW, hex(theme.accent));
      const x = side === "query" ? g.colW - 6 : g.x1 + 6;
      p.text(x, y, imageLabel(text, chars), hex(on ? theme.bg : theme.fg), side === "query" ? "right" : "left");
    }
  });
}

/** What the rows are, in a caption: "sentences", "turns", "segments", "images collapsed". */
export function segmentsWord(by: string): string {
  return by === "images" ? "images collapsed (each image one row)" : by === "positions" ? "segments" : by;
}

/**
 * An exported segments picture's caption: the head view's first line (model,
 * layer, heads) with what the rows are and how many, and what a line's opacity is.
 */
export function segmentCaption(
  title: string, layer: number, heads: readonly number[], numHeads: number, sm: SegmentsMeta, focused: string | null,
): string[] {
  const rows = sm.labels.length;
  const first = [exportCaption(title, layer, heads, numHeads, null), `${rows} rows: ${segmentsWord(sm.by)}`];
  if (focused != null) first.push(`focus “${imageLabel(focused.trim())}”`);
  const what = sm.by === "images"
    ? "a line's opacity: the mean over a row's query tokens of the weight summed over the other row's keys"
    : "a line's opacity: the mean over a segment's query tokens of the weight summed over the other segment's keys";
  return [first.join(" · "), what];
}
