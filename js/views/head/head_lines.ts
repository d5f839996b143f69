// The head view's geometry, as numbers only: which rows a draw covers, which
// (head, query, key) lines it shows and where each runs. No DOM and no canvas,
// so tests/js/head_lines.test.ts checks it directly.
import { arr } from "../../data";
import { pairPasses } from "../../tokens";
import type { Chunk, PairFilter } from "../../wire/types";

/** Height of a token row. */
export const ROW = 18;
/** Width of each token column; the lines run between the two. */
export const COL_W = 128;
export const MAX_VIEW_H = 560;
/** Rows placed beyond the visible ones, so a short scroll shows no gap. */
export const OVERSCAN = 4;
/** Most lines one draw strokes; weaker lines are dropped first. */
export const MAX_LINES = 3000;
/** Opacity steps: lines are stroked a group per (step, head). */
export const BUCKETS = 10;

/**
 * A `top:` chunk's arrays (docs/protocol.md): for each (head, query) row,
 * `slots` keys strongest first, or every key in key order when `index` is null.
 * A comparison's `diff/top:` chunk has signed bytes: then `full` is 127, not 255.
 */
export interface TopRows {
  index: ArrayLike<number> | null;
  weight: ArrayLike<number>;
  rowmax: ArrayLike<number>;
  queries: number;
  slots: number;
  /** The byte that stands for a row's `rowmax`: a weight is `byte / full * rowmax` (absent: 255). */
  full?: number;
}

/** The arrays of a loaded `top:` chunk; its shape is the truth (`_meta` only announces `top_k`). */
export function topRowsOf(chunk: Chunk, queries: number, announcedSlots: number): TopRows {
  const weight = arr(chunk, "weight");
  return {
    index: chunk.arrays.index?.data ?? null,
    weight: weight.data,
    rowmax: arr(chunk, "rowmax").data,
    queries,
    slots: weight.shape[2] ?? announcedSlots,
    full: weight.dtype === "i8" ? 127 : 255,
  };
}

/** Key of slot `t` of a row starting at `base`. */
const keyAt = (top: TopRows, base: number, t: number): number => (top.index ? (top.index[base + t] as number) : t);

/** Where a draw happens: the visible rows (plus overscan) and the lines' two ends. */
export interface HeadLayout {
  width: number;
  /** Height of the visible area. */
  height: number;
  rows: number;
  first: number;
  last: number;
  scrollTop: number;
  x0: number;
  x1: number;
}

export function headLayout(qLen: number, kLen: number, availableWidth: number, scrollTop: number): HeadLayout {
  const rows = Math.max(qLen, kLen);
  const height = Math.min(rows * ROW, MAX_VIEW_H);
  const width = Math.max(availableWidth, 2 * COL_W + 120);
  const first = Math.max(0, Math.floor(scrollTop / ROW) - OVERSCAN);
  const last = Math.min(rows - 1, Math.ceil((scrollTop + height) / ROW) + OVERSCAN);
  return { width, height, rows, first, last, scrollTop, x0: COL_W + 2, x1: width - COL_W - 2 };
}

/** Centre of row `i` in the visible area. */
export const rowY = (i: number, scrollTop: number): number => i * ROW + ROW / 2 - scrollTop;

/** The rows whose labels show in the visible area (no overscan): an export shows what the reader sees. */
export function visibleRows(layout: HeadLayout): { first: number; last: number } {
  return {
    first: Math.max(0, Math.floor(layout.scrollTop / ROW)),
    last: Math.min(layout.rows - 1, Math.ceil((layout.scrollTop + layout.height) / ROW)),
  };
}

export type Hover = { side: "query" | "key"; i: number } | null;

/** The query whose lines alone show: the hovered one, else the selected one; -1 for all (or a hovered key). */
export function focusedQuery(hover: Hover, selected: number | null): number {
  if (hover) return hover.side === "query" ? hover.i : -1;
  return selected ?? -1;
}

/** The lines of one draw, in reusable buffers (`n` of them are valid). */
export interface Lines {
  n: number;
  yq: Float32Array;
  yk: Float32Array;
  w: Float32Array;
  head: Uint16Array;
  /** Scratch for `groupLines`. */
  order: Uint32Array;
  /** Scratch: how many candidate lines per weight byte. */
  hist: Uint32Array;
}

export function emptyLines(): Lines {
  return { n: 0, yq: new Float32Array(0), yk: new Float32Array(0), w: new Float32Array(0), head: new Uint16Array(0), order: new Uint32Array(0), hist: new Uint32Array(256) };
}

function growLines(l: Lines, need: number): Lines {
  if (l.yq.length >= need) return l;
  const cap = Math.max(need, l.yq.length * 2);
  return { ...l, yq: new Float32Array(cap), yk: new Float32Array(cap), w: new Float32Array(cap), head: new Uint16Array(cap), order: new Uint32Array(cap) };
}

/** Which lines a draw keeps. */
export interface LineFilter {
  /** Heads to draw, each below the stream's head count. */
  heads: readonly number[];
  /** Only this query's lines (-1: every query in the layout's rows). */
  query: number;
  /** Only lines to this key (-1: every key). */
  key: number;
  pairFilter: PairFilter;
  /** Sentence segments of queries and keys; the pair filter applies only when both are known. */
  segQ: readonly number[] | null;
  segK: readonly number[] | null;
  /** At most this many lines, the strongest. */
  cap: number;
  /** Line strength relative to each row's largest weight, not absolute (long inputs: every weight is tiny). */
  relative?: boolean;
}

/**
 * Fill `lines` with the lines to draw, at most `f.cap`, strongest kept; an end
 * off the visible area is pulled to its edge. Returns `lines`, or a larger copy
 * when it had too little room (no allocation otherwise).
 */
export function collectLines(lines: Lines, top: TopRows, layout: HeadLayout, f: LineFilter): Lines {
  lines.n = 0;
  const Q = top.queries, T = top.slots;
  const q0 = f.query >= 0 ? f.query : layout.first;
  const q1 = f.query >= 0 ? f.query : Math.min(layout.last, Q - 1);
  const segQ = f.segQ, segK = f.segK;
  const filter = segQ && segK ? f.pairFilter : "all";
  const { index, weight, rowmax } = top;
  const full = top.full ?? 255;
  const minW8 = 1; // weights under 1/255 of the layer's scale are invisible anyway
  /** Every candidate line: (head, query, key, weight as 0..255, weight). */
  const visit = (fn: (hd: number, q: number, k: number, b: number, wt: number) => void): void => {
    for (const hd of f.heads) {
      for (let q = q0; q <= q1; q++) {
        const rm = rowmax[hd * Q + q] as number;
        if (!(rm > 0)) continue;
        const base = (hd * Q + q) * T;
        for (let t = 0; t < T; t++) {
          const w8 = weight[base + t] as number;
          if (w8 === 0) continue;
          const k = index ? (index[base + t] as number) : t;
          if (f.key >= 0 && k !== f.key) continue;
          if (filter !== "all" && !pairPasses(filter, segQ?.[q], segK?.[k])) continue;
          // Signed weights (A − B) are kept and ranked by their size; `relative`: to the row's largest.
          const size = (Math.abs(w8) / full) * 255;
          const b = Math.min(255, Math.floor(f.relative ? size : size * rm));
          if (b >= minW8) fn(hd, q, k, b, f.relative ? w8 / full : (w8 / full) * rm);
        }
      }
    }
  };
  // Pass 1: histogram of weights, to find the threshold that keeps at most `cap` lines.
  const hist = lines.hist;
  hist.fill(0);
  visit((_h, _q, _k, b) => { hist[b] = (hist[b] as number) + 1; });
  let total = 0, thr = 0;
  for (let b = 255; b >= 0; b--) {
    total += hist[b] as number;
    if (total > f.cap) { thr = b + 1; break; }
  }
  const out = growLines(lines, Math.min(total, f.cap) + 1);
  const { yq, yk, w, head } = out;
  let n = 0;
  const clampY = (y: number): number => Math.max(1, Math.min(layout.height - 1, y)); // off-screen: to the edge
  visit((hd, q, k, b, wt) => {
    if (b < thr || n >= f.cap) return;
    yq[n] = clampY(rowY(q, layout.scrollTop));
    yk[n] = clampY(rowY(k, layout.scrollTop));
    w[n] = wt;
    head[n] = hd;
    n++;
  });
  out.n = n;
  return out;
}

/** The largest weight of `query`'s row over `heads` (0 when the row is empty). */
export function rowMax(top: TopRows, heads: readonly number[], query: number): number {
  let m = 0;
  for (const hd of heads) m = Math.max(m, top.rowmax[hd * top.queries + query] as number);
  return m;
}

/** Into `out` (one entry per key): the largest weight (or size of a signed one) over `heads` from `query` to each key. */
export function keyWeights(out: Float32Array, top: TopRows, heads: readonly number[], query: number, signed = false): void {
  out.fill(0);
  const Q = top.queries, T = top.slots;
  for (const hd of heads) {
    const rm = top.rowmax[hd * Q + query] as number, base = (hd * Q + query) * T;
    for (let t = 0; t < T; t++) {
      const k = keyAt(top, base, t), raw = ((top.weight[base + t] as number) / (top.full ?? 255)) * rm;
      // A signed chunk (a comparison's A − B) keeps the sign of the largest change.
      if (Math.abs(raw) > Math.abs(out[k] as number)) out[k] = signed ? raw : Math.abs(raw);
    }
  }
}

/** Stroke width of a draw's lines: many lines are thinner, cheaper to rasterise and easier to read. */
export const lineWidth = (n: number): number => (n > 1000 ? 1 : 1.5);

/** Opacity step of a weight: its group is drawn at opacity (step + 0.5) / BUCKETS. */
export const bucketOf = (w: number): number => Math.min(BUCKETS - 1, Math.floor(w * BUCKETS));

/**
 * Lines sorted into groups of one (opacity step, head), weakest step first so the
 * strongest are drawn on top: group g = step × heads + head holds the lines
 * `lines.order[start[g]] .. lines.order[start[g + 1] - 1]` (a counting sort).
 */
export function groupLines(lines: Lines, heads: number): Uint32Array {
  const { n, w, head, order } = lines;
  const groups = heads * BUCKETS;
  const start = new Uint32Array(groups + 1);
  const group = (i: number): number => bucketOf(w[i] as number) * heads + (head[i] as number);
  for (let i = 0; i < n; i++) { const g = group(i) + 1; start[g] = (start[g] as number) + 1; }
  for (let g = 1; g <= groups; g++) start[g] = (start[g] as number) + (start[g - 1] as number);
  const next = start.slice(0, groups);
  for (let i = 0; i < n; i++) { const g = group(i); order[next[g] as number] = i; next[g] = (next[g] as number) + 1; }
  return start;
}

/** How many lines end at the top or bottom edge: their keys lie above or below the visible rows. */
export function offscreenKeys(lines: Lines, height: number): { above: number; below: number } {
  let above = 0, below = 0;
  for (let i = 0; i < lines.n; i++) {
    const y = lines.yk[i] as number;
    if (y <= 1) above++;
    else if (y >= height - 1) below++;
  }
  return { above, below };
}
