// What the head view's analysis switches do to a layer's rows, as pure functions
// over numbers: pseudo-heads stacked beside the real heads, the first and special
// tokens hidden with each row renormalised, pieces merged into words, several
// queries kept and summed, and the log scale. No DOM; tests/js/head_transform.test.ts
// checks each against a direct computation.
import type { TopRows } from "./head_lines";

/**
 * A layer's weights, decoded: row (head, query) holds `slots` weights,
 * `value[(head * queries + query) * slots + t]` going to key `index[...]`, or to
 * key `t` when `index` is null (every key, in key order).
 */
export interface Rows {
  heads: number;
  queries: number;
  keys: number;
  slots: number;
  index: ArrayLike<number> | null;
  value: Float32Array;
}

/** Rows `decodeTop` has decoded since the page opened (tests count them: a draw decodes only the rows new to it). */
export const decoded = { rows: 0 };

/** A `top:`-format chunk's rows as weights (`w = byte / 255 * rowmax`). */
export function decodeTop(top: TopRows, heads: number, keys: number): Rows {
  const { queries, slots } = top;
  decoded.rows += heads * queries;
  const value = new Float32Array(heads * queries * slots);
  for (let r = 0; r < heads * queries; r++) {
    const scale = (top.rowmax[r] as number) / 255;
    for (let t = 0; t < slots; t++) value[r * slots + t] = (top.weight[r * slots + t] as number) * scale;
  }
  return { heads, queries, keys, slots, index: top.index, value };
}

/** Every key of every row, in key order (a row's missing keys weigh 0). */
export function densify(r: Rows): Rows {
  if (!r.index) return r;
  const value = new Float32Array(r.heads * r.queries * r.keys);
  for (let row = 0; row < r.heads * r.queries; row++) {
    for (let t = 0; t < r.slots; t++) {
      const at = row * r.slots + t, v = r.value[at] as number;
      if (v > 0) value[row * r.keys + (r.index[at] as number)] = v;
    }
  }
  return { ...r, slots: r.keys, index: null, value };
}

/** `b`'s heads after `a`'s (the pseudo-heads beside the real ones); both over the same tokens. */
export function stackHeads(a: Rows, b: Rows): Rows {
  const sameForm = (a.index === null) === (b.index === null) && a.slots === b.slots;
  const [x, y] = sameForm ? [a, b] : [densify(a), densify(b)];
  const value = new Float32Array(x.value.length + y.value.length);
  value.set(x.value);
  value.set(y.value, x.value.length);
  let index: Uint32Array | null = null;
  if (x.index && y.index) {
    index = new Uint32Array(value.length);
    index.set(Array.from(x.index));
    index.set(Array.from(y.index), x.value.length);
  }
  return { heads: x.heads + y.heads, queries: x.queries, keys: x.keys, slots: x.slots, index, value };
}

/**
 * Hide keys and queries: a hidden key's weight goes, and the rest of its row is
 * divided by `1 - hidden weight` (renormalised over the keys left; exact where
 * the row holds every hidden key, as it does when all keys are kept); a hidden
 * query's row is emptied. A row left with (almost) nothing stays empty.
 */
export function hideTokens(r: Rows, hiddenQuery: ArrayLike<number>, hiddenKey: ArrayLike<number>): Rows {
  const value = new Float32Array(r.value.length);
  const keyAt = (at: number, t: number): number => (r.index ? (r.index[at] as number) : t);
  for (let hd = 0; hd < r.heads; hd++) {
    for (let q = 0; q < r.queries; q++) {
      if (hiddenQuery[q]) continue;
      const base = (hd * r.queries + q) * r.slots;
      let hidden = 0;
      for (let t = 0; t < r.slots; t++) if (hiddenKey[keyAt(base + t, t)]) hidden += r.value[base + t] as number;
      const left = 1 - hidden;
      if (left <= 1e-6) continue;
      for (let t = 0; t < r.slots; t++) {
        if (!hiddenKey[keyAt(base + t, t)]) value[base + t] = (r.value[base + t] as number) / left;
      }
    }
  }
  return { ...r, value };
}

/** Number of words in a word-id list (ids run 0, 1, 2, ...). */
export const wordCount = (words: readonly number[]): number => (words.length ? (words[words.length - 1] as number) + 1 : 0);

/** Most values `mergeWords` writes densely (heads × words × words: 16 MB of float32). */
export const DENSE_WORDS = 1 << 22;

/**
 * Pieces merged into words, as attnscope.analysis.merge_words: attention to a
 * word is the sum over its key pieces, from a word the mean over its query
 * pieces. Every key word in order (dense) while that is at most `denseLimit`
 * values; past it (thousands of tokens: 12 × 3500² words would be 590 MB)
 * each word row holds the key words its pieces reach, strongest first: all
 * of them, up to twice a token's slots (the rest are the weakest).
 */
export function mergeWords(r: Rows, queryWords: readonly number[], keyWords: readonly number[], denseLimit = DENSE_WORDS): Rows {
  const nq = wordCount(queryWords), nk = wordCount(keyWords);
  if (r.heads * nq * nk > denseLimit) return mergeWordsSparse(r, queryWords, keyWords, nq, nk);
  const pieces = new Float32Array(nq);
  for (const w of queryWords) pieces[w] = (pieces[w] as number) + 1;
  const value = new Float32Array(r.heads * nq * nk);
  for (let hd = 0; hd < r.heads; hd++) {
    for (let q = 0; q < r.queries; q++) {
      const qw = queryWords[q] as number, base = (hd * r.queries + q) * r.slots, out = (hd * nq + qw) * nk;
      const share = 1 / (pieces[qw] as number);
      for (let t = 0; t < r.slots; t++) {
        const v = r.value[base + t] as number;
        if (v === 0) continue;
        const k = r.index ? (r.index[base + t] as number) : t;
        const at = out + (keyWords[k] as number);
        value[at] = (value[at] as number) + v * share;
      }
    }
  }
  return { heads: r.heads, queries: nq, keys: nk, slots: nk, index: null, value };
}

/** `mergeWords` as rows of (key word, weight), a word row as wide as its pieces' slots together. */
function mergeWordsSparse(r: Rows, queryWords: readonly number[], keyWords: readonly number[], nq: number, nk: number): Rows {
  // The query tokens of each word, grouped.
  const starts = new Uint32Array(nq + 1);
  for (const w of queryWords) starts[w + 1] = (starts[w + 1] as number) + 1;
  let most = 0;
  for (let w = 0; w < nq; w++) {
    most = Math.max(most, starts[w + 1] as number);
    starts[w + 1] = (starts[w + 1] as number) + (starts[w] as number);
  }
  const tokens = new Uint32Array(r.queries), fill = starts.slice(0, nq);
  for (let q = 0; q < r.queries; q++) tokens[fill[queryWords[q] as number]!++] = q;
  // A row keeps at most twice a token's slots: one word of many pieces (a URL, a number)
  // would otherwise widen every row of the layer.
  const S = Math.min(nk, r.slots * Math.min(most, 2));
  const index = new Uint32Array(r.heads * nq * S), value = new Float32Array(r.heads * nq * S);
  const acc = new Float32Array(nk), seen = new Uint8Array(nk), touched: number[] = [];
  for (let hd = 0; hd < r.heads; hd++) {
    for (let qw = 0; qw < nq; qw++) {
      const from = starts[qw] as number, to = starts[qw + 1] as number, share = 1 / (to - from);
      touched.length = 0;
      for (let p = from; p < to; p++) {
        const base = (hd * r.queries + (tokens[p] as number)) * r.slots;
        for (let t = 0; t < r.slots; t++) {
          const v = r.value[base + t] as number;
          if (v === 0) continue;
          const kw = keyWords[r.index ? (r.index[base + t] as number) : t] as number;
          if (!seen[kw]) { seen[kw] = 1; touched.push(kw); }
          acc[kw] = (acc[kw] as number) + v * share;
        }
      }
      touched.sort((a, b) => (acc[b] as number) - (acc[a] as number) || a - b);
      const out = (hd * nq + qw) * S;
      touched.forEach((kw, i) => {
        if (i < S) { index[out + i] = kw; value[out + i] = acc[kw] as number; }
        acc[kw] = 0; seen[kw] = 0;
      });
    }
  }
  return { heads: r.heads, queries: nq, keys: nk, slots: S, index, value };
}

/** Only the rows of `queries` (display rows) keep their weights: the lines of several queries at once. */
export function keepQueries(r: Rows, queries: readonly number[]): Rows {
  const value = new Float32Array(r.value.length);
  for (let hd = 0; hd < r.heads; hd++) {
    for (const q of queries) {
      if (q < 0 || q >= r.queries) continue;
      const at = (hd * r.queries + q) * r.slots;
      value.set(r.value.subarray(at, at + r.slots), at);
    }
  }
  return { ...r, value };
}

/**
 * Into `out` (one entry per key): for each key, the largest over `heads` of the
 * summed weight from `queries` to it (attnscope.analysis.query_sum per head).
 */
export function summedKeys(out: Float32Array, r: Rows, heads: readonly number[], queries: readonly number[]): void {
  out.fill(0);
  const sum = new Float32Array(r.keys);
  for (const hd of heads) {
    sum.fill(0);
    for (const q of queries) {
      if (q < 0 || q >= r.queries) continue;
      const base = (hd * r.queries + q) * r.slots;
      for (let t = 0; t < r.slots; t++) {
        const k = r.index ? (r.index[base + t] as number) : t;
        sum[k] = (sum[k] as number) + (r.value[base + t] as number);
      }
    }
    for (let k = 0; k < r.keys; k++) if ((sum[k] as number) > (out[k] as number)) out[k] = sum[k] as number;
  }
}

/** Decades the log scale spans: a weight of 10^-LOG_DECADES or less is invisible. */
export const LOG_DECADES = 3;

/** A weight on the log scale: `1 + log10(w) / LOG_DECADES`, 0 at and below 10^-LOG_DECADES, 1 at 1. */
export function logWeight(w: number): number {
  return w > 0 ? Math.max(0, 1 + Math.log10(w) / LOG_DECADES) : 0;
}

/** Every weight on the log scale. */
export function logScale(r: Rows): Rows {
  return { ...r, value: r.value.map(logWeight) };
}

/** Rows in the `TopRows` form the line collector reads (`w = byte / 255 · rowmax`, as in a chunk). */
export function asTopRows(r: Rows): TopRows {
  // Each row relative to its own largest weight, as the chunks are: the row
  // scale and the faint-row notice read `rowmax`.
  const rows = r.heads * r.queries;
  const rowmax = new Float32Array(rows);
  const weight = new Float32Array(r.value.length);
  for (let row = 0; row < rows; row++) {
    let m = 0;
    for (let t = 0; t < r.slots; t++) m = Math.max(m, r.value[row * r.slots + t] as number);
    rowmax[row] = m;
    if (m > 0) for (let t = 0; t < r.slots; t++) weight[row * r.slots + t] = ((r.value[row * r.slots + t] as number) / m) * 255;
  }
  return { index: r.index, weight, rowmax, queries: r.queries, slots: r.slots };
}
