// The head view's analysis kept between draws. A long layer's rows arrive a block
// at a time (head_blocks.ts); each block goes through the pipeline of
// head_analysis.ts `analyse` once, into whole-layer arrays the next draws reuse,
// until the layer or a switch changes. Every step but merging words works row by
// row, so a block's rows come out as they would from the whole layer (words: the
// whole layer again, as `analyse`). No DOM: tests/js/head_kept.test.ts.
import type { ValueNorms } from "../value_weight";
import { valueWeighted } from "../value_weight";
import { analyse, hiddenTokens, type AnalysisInput, type Analysed } from "./head_analysis";
import type { TopRows } from "./head_lines";
import { asTopRows, decodeTop, densify, hideTokens, keepQueries, logScale, type Rows } from "./head_transform";

/** Query rows `[first, end)` of a layer that are loaded (head_blocks.ts `loaded`). */
export type LoadedRange = readonly [number, number];

/** What a view keeps: the result so far, and which loaded ranges are in it. */
export interface Kept {
  /** The layer and switches it was computed for (not which blocks). */
  sig: string;
  /** The first row of each range already in `value`. */
  done: Set<number>;
  value: Analysed;
  /** Words mode: the signature of the whole-layer result (which blocks included). */
  whole: string;
  plan: Plan;
}

/** The hidden queries and keys, and the layer's shape the blocks are written into. */
export interface Plan {
  hiddenQ: Uint8Array | null;
  hiddenK: Uint8Array | null;
  /** Pseudo-heads that do not share the real heads' form (index, slots): both become dense, as stackHeads does. */
  dense: boolean;
}

/** Rows `[q0, q1)` of every head of `t` (`heads` × `queries` rows), as rows of their own. */
function sliceTop(t: TopRows, heads: number, q0: number, q1: number): TopRows {
  const Q = t.queries, S = t.slots, n = q1 - q0;
  const weight = new Float32Array(heads * n * S), rowmax = new Float32Array(heads * n);
  const index = t.index ? new Uint32Array(heads * n * S) : null;
  for (let hd = 0; hd < heads; hd++) {
    for (let i = 0; i < n; i++) {
      const from = hd * Q + q0 + i, to = hd * n + i;
      rowmax[to] = t.rowmax[from] as number;
      for (let s = 0; s < S; s++) {
        weight[to * S + s] = t.weight[from * S + s] as number;
        if (index && t.index) index[to * S + s] = t.index[from * S + s] as number;
      }
    }
  }
  return { index, weight, rowmax, queries: n, slots: S };
}

/** Value norms with only the row sums of queries `[q0, q1)` (the key norms stay whole). */
function sliceNorms(v: ValueNorms, heads: number, queries: number, q0: number, q1: number): ValueNorms {
  const n = q1 - q0, rowsum = new Float32Array(heads * n);
  for (let hd = 0; hd < heads; hd++) rowsum.set(v.rowsum.subarray(hd * queries + q0, hd * queries + q1), hd * n);
  return { norm: v.norm, rowsum };
}

/** The steps after stacking: hide, keep the summed queries, log (the rows are queries `q0 ..`). */
function finish(a: AnalysisInput, p: Plan, rows: Rows, q0: number): Analysed {
  if (p.dense) rows = densify(rows);
  if (p.hiddenQ && p.hiddenK) rows = hideTokens(rows, p.hiddenQ.subarray(q0, q0 + rows.queries), p.hiddenK);
  const weights = rows;
  if (a.keep.length) rows = keepQueries(rows, a.keep.map((q) => q - q0));
  if (a.log) rows = logScale(rows);
  return { lines: asTopRows(rows), weights };
}

/** Copy `part` (heads `h0 ..`, queries `q0 ..`) into the whole layer's arrays. */
function place(out: Analysed, part: Analysed, h0: number, q0: number): void {
  const Q = out.weights.queries, S = out.weights.slots, n = part.weights.queries;
  for (let hd = 0; hd < part.weights.heads; hd++) {
    const from = hd * n, to = (h0 + hd) * Q + q0;
    out.weights.value.set(part.weights.value.subarray(from * S, (from + n) * S), to * S);
    (out.lines.weight as Float32Array).set((part.lines.weight as Float32Array).subarray(from * S, (from + n) * S), to * S);
    (out.lines.rowmax as Float32Array).set((part.lines.rowmax as Float32Array).subarray(from, from + n), to);
    const index = out.weights.index as Uint32Array | null, got = part.weights.index;
    if (index && got) for (let i = 0; i < n * S; i++) index[to * S + i] = got[from * S + i] as number;
  }
}

/** Empty whole-layer arrays for `a`: real heads then pseudo-heads, every query, the stacked form. */
function emptyLayer(a: AnalysisInput, p: Plan): Analysed {
  const keys = a.display.tokensK.labels.length, Q = a.top.queries;
  const heads = a.heads + (a.pseudo ? a.pseudoHeads : 0);
  const slots = p.dense ? keys : a.top.slots;
  const indexed = !p.dense && !!a.top.index;
  const index = indexed ? new Uint32Array(heads * Q * slots) : null;
  const weights: Rows = { heads, queries: Q, keys, slots, index, value: new Float32Array(heads * Q * slots) };
  const lines: TopRows = { index, weight: new Float32Array(heads * Q * slots), rowmax: new Float32Array(heads * Q), queries: Q, slots };
  return { lines, weights };
}

/** `analyse`'s result for the real heads' query rows `[q0, q1)`. */
function analyseBlock(a: AnalysisInput, p: Plan, q0: number, q1: number): Analysed {
  const keys = a.display.tokensK.labels.length;
  let rows = decodeTop(sliceTop(a.top, a.heads, q0, q1), a.heads, keys);
  if (a.values) rows = valueWeighted(rows, sliceNorms(a.values, a.heads, a.top.queries, q0, q1));
  return finish(a, p, rows, q0);
}

/**
 * `analyse(a)`, computing only the rows of `loaded` not in `prev` (when `prev` was kept for
 * the same `sig`: the same layer and switches); rows not loaded are empty. Words mode
 * merges query rows across blocks: it runs `analyse` on the whole layer whenever `rev` changes.
 */
export function analyseKept(prev: Kept | null, sig: string, rev: string, a: AnalysisInput, loaded: readonly LoadedRange[]): Kept {
  const d = a.display;
  if (d.wordsQ && d.wordsK) {
    if (prev?.sig === sig && prev.whole === rev) return prev;
    return { sig, done: new Set(), value: analyse(a), whole: rev, plan: { hiddenQ: null, hiddenK: null, dense: false } };
  }
  let kept = prev?.sig === sig ? prev : null;
  if (!kept) {
    const sameForm = !a.pseudo || ((a.top.index === null) === (a.pseudo.index === null) && a.top.slots === a.pseudo.slots);
    const plan: Plan = { hiddenQ: a.hide ? hiddenTokens(d.tokensQ) : null, hiddenK: a.hide ? hiddenTokens(d.tokensK) : null, dense: !sameForm };
    kept = { sig, done: new Set(), value: emptyLayer(a, plan), whole: "", plan };
    // The pseudo-heads' chunk holds every query row at once: in with the first rows.
    if (a.pseudo) place(kept.value, finish(a, plan, decodeTop(a.pseudo, a.pseudoHeads, d.tokensK.labels.length), 0), a.heads, 0);
  }
  for (const [q0, q1] of loaded) {
    if (kept.done.has(q0)) continue;
    place(kept.value, analyseBlock(a, kept.plan, q0, q1), 0, q0);
    kept.done.add(q0);
  }
  return kept;
}
