// The model view's collapsed rows (the `segment_rows` trait, "collapse images"): each
// cell is its head's segment × segment mass from the `segments:<stream>:<layer>` chunk
// (each image one segment, every other token its own; docs/protocol.md "segments:"),
// instead of its token × token thumbnail. A layer's chunk (heads × S² float32) is asked
// for only once its row of cells is on the screen.
import { isolate } from "../../label_text";
import { segmentsKey } from "../../wire/keys";
import type { Chunk, SegmentsMeta } from "../../wire/types";
import type { Side } from "../../tokens";
import { segmentRows, segmentsOf } from "../head/head_segments";
import { THUMB_DECADES, rowsToOwnMax, type Thumbnails } from "./model_grid";
import { perRow, streamNow, type ModelView } from "./model_state";
import { GAP, LABEL_H, rowStep } from "./model_grid";

/** What a cell of a layer whose chunk is not in the page says. */
export const NOT_SAVED = "collapsed rows not saved for this layer";

/**
 * A layer's segment mass (`heads` × S × S float32, NaN for a segment with no counted
 * query) as `thumbs:`-style log bytes (protocol.md), each head to its own largest mass:
 * 255 its largest, 1 at most 10^-THUMB_DECADES of it, 0 for zero or NaN.
 */
export function segmentBytes(mass: ArrayLike<number>, heads: number, S: number): Uint8Array {
  const n = S * S, out = new Uint8Array(heads * n);
  for (let hd = 0; hd < heads; hd++) {
    let mx = 0;
    for (let i = hd * n; i < (hd + 1) * n; i++) { const v = mass[i] as number; if (v > mx) mx = v; }
    if (!(mx > 0)) continue;
    for (let i = hd * n; i < (hd + 1) * n; i++) {
      const v = mass[i] as number;
      if (!(v > 0)) continue;
      out[i] = Math.max(1, Math.min(255, Math.round(255 + (254 * Math.log10(v / mx)) / THUMB_DECADES)));
    }
  }
  return out;
}

/** The collapsed rows of the shown stream while the reader has them on (else null: token cells). */
export const segmentMode = (m: ModelView): SegmentsMeta | null =>
  segmentRows(m.ctx.meta, m.ctx.store.get()) ? segmentsOf(m.ctx.meta, m.ctx.store.get().stream) : null;

/** The segments as an axis of the preview: their labels ("img0 (4×4 patches)" for an image). */
export function segmentSide(sm: SegmentsMeta): Side {
  return { labels: sm.labels, raw: sm.titles, kinds: sm.labels.map(() => "token" as const), continues: sm.labels.map(() => false), segments: null };
}

/** The layers whose row of cells is within the window now, one more above and below. */
export function visibleLayers(m: ModelView): number[] {
  const layers = streamNow(m).layers.length, step = rowStep(m.geo);
  if (step <= GAP) return [];
  const top = m.dom.canvas.getBoundingClientRect().top;
  const y0 = -top - LABEL_H, y1 = (window.innerHeight || 0) - top - LABEL_H;
  const first = Math.max(0, Math.floor(y0 / step) - 1), last = Math.min(layers - 1, Math.floor(y1 / step) + 1);
  const out: number[] = [];
  for (let l = first; l <= last; l++) out.push(l);
  return out;
}

/** Ask for the chunks of the layers on screen (and `also`, a hovered cell's), each key once. */
export function loadSegments(m: ModelView, also: number[] = []): void {
  if (!segmentMode(m)) return;
  const { store, data } = m.ctx;
  const stream = store.get().stream;
  const want = [...new Set([...visibleLayers(m), ...also])].map((l) => segmentsKey(stream, l)).filter((k) => !m.segAsked.has(k));
  if (!want.length) return;
  for (const k of want) {
    m.segAsked.add(k);
    const c = data.peek(k);
    if (c) m.segChunks.set(k, c);
  }
  const missing = want.filter((k) => !m.segChunks.has(k));
  if (!missing.length) { m.redraw(); return; }
  // One request a layer: a layer's chunk can be megabytes (heads × S² float32), and
  // kernel messages are best kept to a few.
  for (const k of missing) {
    data.request([k]).then((got) => {
      m.segChunks.set(k, got.get(k) ?? { key: k, arrays: {}, error: "missing" });
      m.redraw();
      if (m.hoverCell) m.onSegments();
    }).catch(() => undefined);
  }
}

/** Why a layer's collapsed cells cannot be drawn: its chunk is not in this page, or an error. */
function whyNot(c: Chunk): string {
  return /not included in this exported page/.test(c.error ?? "") ? NOT_SAVED : `collapsed rows: ${c.error ?? ""}`;
}

/** Layer `l`'s cells (`heads` × S × S log bytes), a sentence saying why not, or null while loading. */
export function segmentLayer(m: ModelView, l: number): Thumbnails | string | null {
  const sm = segmentMode(m);
  if (!sm) return null;
  const key = segmentsKey(m.ctx.store.get().stream, l);
  const c = m.segChunks.get(key);
  if (!c) return null;
  if (c.error || !c.arrays.mass) return whyNot(c);
  const S = sm.labels.length, heads = streamNow(m).num_heads, own = perRow(m);
  const made = m.segBytes.get(key);
  if (made && made.perRow === own) return { data: made.data, rows: S, cols: S };
  let bytes = segmentBytes(c.arrays.mass.data as Float32Array, heads, S);
  if (own) bytes = rowsToOwnMax(bytes, S);
  m.segBytes.set(key, { perRow: own, data: bytes });
  return { data: bytes, rows: S, cols: S };
}

/** Forget the loaded chunks (another stream). */
export function resetSegments(m: ModelView): void {
  m.segAsked.clear();
  m.segChunks.clear();
  m.segBytes.clear();
}

/** The (query, key) segment under a pointer at `share` (0..1 down and across) of a cell, and its mass. */
export function segmentPair(m: ModelView, l: number, hd: number, share: { x: number; y: number }): string | null {
  const sm = segmentMode(m);
  const c = sm ? m.segChunks.get(segmentsKey(m.ctx.store.get().stream, l)) : undefined;
  if (!sm || !c || c.error || !c.arrays.mass) return null;
  const S = sm.labels.length;
  const clamp = (v: number): number => Math.max(0, Math.min(S - 1, Math.floor(v * S)));
  const q = clamp(share.y), k = clamp(share.x);
  const v = (c.arrays.mass.data as Float32Array)[(hd * S + q) * S + k] as number;
  return `query ${isolate(sm.labels[q] ?? String(q))} → key ${isolate(sm.labels[k] ?? String(k))}: ${Number.isNaN(v) ? "no counted query" : v.toFixed(3)}`;
}
