// The head view's segments mode, as numbers: where each segment's row sits, and
// which lines (query segment → key segment, per head) a draw paints. The
// `segments:<stream>:<layer>` chunk holds `mass` f32 (heads, S, S): the mean over a
// segment's queries of the weight summed over another segment's keys
// (attnscope.segments(...).mass). No DOM here: tests/js/segment_geometry.test.ts.

/** Height of one segment row, CSS pixels. */
export const SEGMENT_ROW = 26;
/** Width of each label column at most (narrow views give each a third). */
export const SEGMENT_COL_W = 220;
/** Lines fainter than this (one step of a byte) are not drawn. */
export const SEGMENT_MIN_WEIGHT = 1 / 255;
/** Most lines one draw paints, strongest kept. */
export const SEGMENT_MAX_LINES = 20000;

export interface SegmentLayout {
  width: number;
  height: number;
  /** Width of each label column. */
  colW: number;
  /** Where lines start (the query column's right edge) and end (the key column's left edge). */
  x0: number;
  x1: number;
}

/** The panel's geometry for `count` segments in `width` pixels. */
export function segmentLayout(count: number, width: number): SegmentLayout {
  const colW = Math.max(60, Math.min(SEGMENT_COL_W, Math.floor(width / 3)));
  return { width, height: Math.max(1, count) * SEGMENT_ROW, colW, x0: colW, x1: Math.max(colW, width - colW) };
}

/** The vertical centre of segment row `i`. */
export const segmentY = (i: number): number => i * SEGMENT_ROW + SEGMENT_ROW / 2;

/** What the reader focuses: a query segment (its lines out) or a key segment (its lines in). */
export type SegmentFocus = { side: "query" | "key"; i: number } | null;

export interface SegmentLine {
  /** Query segment, key segment, head (an index into the chunk's heads). */
  a: number;
  b: number;
  head: number;
  /** The segment mass, 0..1: the line's opacity. */
  w: number;
}

/**
 * The lines to draw: for each shown head, each (query segment, key segment) whose
 * mass is at least SEGMENT_MIN_WEIGHT, only those of the focused segment when one
 * is; NaN (a segment with no counted query) draws nothing. Over `cap`, the
 * strongest are kept. Sorted faint first, so the strongest are painted on top.
 */
export function segmentLines(mass: Float32Array, count: number, heads: readonly number[], focus: SegmentFocus, cap = SEGMENT_MAX_LINES): SegmentLine[] {
  const out: SegmentLine[] = [];
  const per = count * count;
  for (const head of heads) {
    if (head < 0 || (head + 1) * per > mass.length) continue;
    for (let a = 0; a < count; a++) {
      if (focus?.side === "query" && focus.i !== a) continue;
      for (let b = 0; b < count; b++) {
        if (focus?.side === "key" && focus.i !== b) continue;
        const w = mass[head * per + a * count + b] as number;
        if (w >= SEGMENT_MIN_WEIGHT) out.push({ a, b, head, w: Math.min(1, w) });
      }
    }
  }
  out.sort((x, y) => x.w - y.w);
  return out.length > cap ? out.slice(out.length - cap) : out;
}

/**
 * Per key segment, the largest mass over the shown heads from the focused query
 * segment (the key bars); null when no query segment is focused.
 */
export function segmentKeyWeights(mass: Float32Array, count: number, heads: readonly number[], focus: SegmentFocus): Float32Array | null {
  if (focus?.side !== "query") return null;
  const out = new Float32Array(count);
  const per = count * count;
  for (const head of heads) {
    if (head < 0 || (head + 1) * per > mass.length) continue;
    for (let b = 0; b < count; b++) {
      const w = mass[head * per + focus.i * count + b] as number;
      if (w > (out[b] as number)) out[b] = w;
    }
  }
  return out;
}

/** The segment holding token `token`, from the edges `[0, s1, ..., n]`; -1 when outside. */
export function segmentOf(edges: readonly number[], token: number): number {
  let lo = 0, hi = edges.length - 2;
  if (hi < 0 || token < (edges[0] as number) || token >= (edges[edges.length - 1] as number)) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((edges[mid] as number) <= token) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
