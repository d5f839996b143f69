// Attention computed in the page from a head's q and k (protocol.md, "Pages that
// derive"): a lean exported page embeds each head's `qk:` chunk once and leaves
// out the `top:` and `attn:` chunks that repeat it at one byte per weight. The
// page host makes those here, in the same format Python sends them.
import { arr } from "./data";
import type { Chunk, TypedArray } from "./wire/types";

/** One head's score terms, read once from its `qk:` chunk. */
export interface QkParts {
  q: Float32Array;
  k: Float32Array;
  /** Queries, keys, and the width of q and k. */
  Q: number;
  K: number;
  D: number;
  scaling: number;
  bias: TypedArray | null;
  /** u8 `(Q, K)`, 1 = hidden (a mask with no rule), or null. */
  mask: TypedArray | null;
  /** i32 `(Q, 2)`: each query sees keys `start ≤ j < stop` only (causal, window, padding), or null. */
  spans: TypedArray | null;
  softcap: number | null;
  /** The sink logit, or null (none, or -inf: this layer has none). */
  sink: number | null;
  kvHead: number;
  /** The recorded weights' row maxima (pages that derive `attn:` carry them to check against). */
  rowmax: TypedArray | null;
}

const scalar = (c: Chunk, name: string): number | null => {
  const a = c.arrays[name];
  return a?.data.length ? (a.data[0] as number) : null;
};

/** The arrays and scalars of a `qk:` chunk, named. */
export function qkParts(chunk: Chunk): QkParts {
  const qA = arr(chunk, "q"), kA = arr(chunk, "k");
  const rawSink = scalar(chunk, "sink");
  return {
    q: qA.data as Float32Array,
    k: kA.data as Float32Array,
    Q: qA.shape[0] as number,
    K: kA.shape[0] as number,
    D: qA.shape[1] as number,
    scaling: scalar(chunk, "scaling") ?? 1,
    bias: chunk.arrays.bias?.data ?? null,
    mask: chunk.arrays.mask?.data ?? null,
    spans: chunk.arrays.spans?.data ?? null,
    softcap: scalar(chunk, "softcap") || null,
    sink: rawSink != null && Number.isFinite(rawSink) ? rawSink : null,
    kvHead: scalar(chunk, "kv_head") ?? -1,
    rowmax: chunk.arrays.rowmax?.data ?? null,
  };
}

/** softmax over the unmasked scores (a sink adds exp(sink) to the denominator only). */
export function softmaxRow(score: Float64Array, masked: Uint8Array, sink: number | null, out: Float64Array = new Float64Array(score.length)): Float64Array {
  let m = sink ?? -Infinity;
  for (let j = 0; j < score.length; j++) if (!masked[j] && (score[j] as number) > m) m = score[j] as number;
  let z = sink != null ? Math.exp(sink - m) : 0;
  for (let j = 0; j < score.length; j++) {
    const e = masked[j] ? 0 : Math.exp((score[j] as number) - m);
    out[j] = e;
    z += e;
  }
  for (let j = 0; j < out.length; j++) out[j] = z > 0 ? (out[j] as number) / z : 0;
  return out;
}

/** The score the model softmaxes for (query, key j), from its q·k: scaled, biased, capped. */
export function scoreOf(p: QkParts, query: number, j: number, qk: number): number {
  let s = qk * p.scaling;
  if (p.bias) s += p.bias[query * p.K + j] as number;
  return p.softcap ? p.softcap * Math.tanh(s / p.softcap) : s;
}

/** The keys `[start, stop)` a query may see by its span (all of them without spans). */
export function spanOf(p: QkParts, query: number): [number, number] {
  if (!p.spans) return [0, p.K];
  const start = Math.min(Math.max(0, p.spans[2 * query] as number), p.K);
  return [start, Math.min(Math.max(start, p.spans[2 * query + 1] as number), p.K)];
}

/** `masked[j]` = 1 where key j is hidden from `query`: by the mask, or outside its span. */
export function maskRow(p: QkParts, query: number, masked: Uint8Array): Uint8Array {
  const { K, mask } = p;
  if (mask) for (let j = 0; j < K; j++) masked[j] = mask[query * K + j] as number;
  else masked.fill(0);
  const [start, stop] = spanOf(p, query);
  masked.fill(1, 0, start);
  masked.fill(1, stop, K);
  return masked;
}

/** One query row's weights into `out` (length K); `masked` and `score` are scratch of length K. */
export function rowWeights(p: QkParts, query: number, out: Float64Array, score = new Float64Array(p.K), masked = new Uint8Array(p.K)): Float64Array {
  const { q, k, D, K, scaling, bias, softcap } = p;
  const base = query * D, D4 = D - (D % 4);
  // The hot loop of a derived page (every head, query and key of a layer): four sums
  // in flight, only over the keys the query's span lets it see (half of a causal
  // head), and the bias, cap and mask only where the head has them.
  const [start, stop] = spanOf(p, query);
  for (let j = start; j < stop; j++) {
    const kb = j * D;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, d = 0;
    for (; d < D4; d += 4) {
      s0 += (q[base + d] as number) * (k[kb + d] as number);
      s1 += (q[base + d + 1] as number) * (k[kb + d + 1] as number);
      s2 += (q[base + d + 2] as number) * (k[kb + d + 2] as number);
      s3 += (q[base + d + 3] as number) * (k[kb + d + 3] as number);
    }
    for (; d < D; d++) s0 += (q[base + d] as number) * (k[kb + d] as number);
    score[j] = (s0 + s1 + s2 + s3) * scaling;
  }
  const row = query * K;
  if (bias) for (let j = start; j < stop; j++) score[j] = (score[j] as number) + (bias[row + j] as number);
  if (softcap) for (let j = start; j < stop; j++) score[j] = softcap * Math.tanh((score[j] as number) / softcap);
  return softmaxRow(score, maskRow(p, query, masked), p.sink, out);
}

/** A row quantised as protocol.md says: `round(255 · w / rowmax)`, rowmax 0 for a row of zeros. */
function quantiseRow(w: Float64Array, bytes: Uint8Array, offset: number): number {
  let max = 0;
  for (let j = 0; j < w.length; j++) if ((w[j] as number) > max) max = w[j] as number;
  for (let j = 0; j < w.length; j++) bytes[offset + j] = max > 0 ? Math.round((255 * (w[j] as number)) / max) : 0;
  return max;
}

/** An `attn:` chunk (u8 weights, f32 row maxima) computed from the same head's `qk:` chunk. */
export function attnFromQk(key: string, qk: Chunk): Chunk {
  const p = qkParts(qk);
  const weight = new Uint8Array(p.Q * p.K), rowmax = new Float32Array(p.Q);
  const w = new Float64Array(p.K), score = new Float64Array(p.K), masked = new Uint8Array(p.K);
  for (let i = 0; i < p.Q; i++) rowmax[i] = quantiseRow(rowWeights(p, i, w, score, masked), weight, i * p.K);
  return {
    key,
    arrays: {
      weight: { dtype: "u8", shape: [p.Q, p.K], data: weight },
      rowmax: { dtype: "f32", shape: [p.Q], data: rowmax },
    },
  };
}

/**
 * A `top:` chunk of `topK` keys per query computed from the `qk:` chunks of every
 * head of the layer, in head order. Each row keeps its strongest keys, strongest
 * first (keys of one byte value in key order); with `topK` equal to the key
 * count the weights are in key order and there is no `index`, as from Python.
 * With `rows` (`[first, stop)`), only those query rows: a `top:<s>:<l>:<first>` block.
 */
export function topFromQk(key: string, heads: Chunk[], topK: number, rows?: readonly [number, number]): Chunk {
  const parts = heads.map(qkParts);
  const head0 = parts[0];
  if (!head0) throw new Error(`${key}: no heads to compute it from`);
  const K = head0.K, Qall = head0.Q;
  const from = Math.max(0, Math.min(rows?.[0] ?? 0, Qall)), Q = Math.max(0, Math.min(rows?.[1] ?? Qall, Qall) - from);
  const H = parts.length, k = Math.min(topK, K), dense = k === K;
  const weight = new Uint8Array(H * Q * k), rowmax = new Float32Array(H * Q);
  const index = dense ? null : K < 65536 ? new Uint16Array(H * Q * k) : new Uint32Array(H * Q * k);
  const w = new Float64Array(K), score = new Float64Array(K), masked = new Uint8Array(K);
  const bytes = new Uint8Array(K), counts = new Uint32Array(257);
  parts.forEach((p, h) => {
    if (p.Q !== Qall || p.K !== K) throw new Error(`${key}: head ${h} is ${p.Q}×${p.K}, head 0 ${Qall}×${K}`);
    for (let i = 0; i < Q; i++) {
      const row = h * Q + i;
      rowmax[row] = quantiseRow(rowWeights(p, from + i, w, score, masked), dense ? weight : bytes, dense ? row * K : 0);
      if (!index) continue;
      // Counting sort by byte value, largest first: O(K) per row.
      counts.fill(0);
      for (let j = 0; j < K; j++) counts[256 - (bytes[j] as number)]! += 1;
      for (let b = 1; b < 257; b++) counts[b]! += counts[b - 1] as number;
      const start = row * k;
      for (let j = 0; j < K; j++) {
        const slot = (counts[255 - (bytes[j] as number)] as number);
        counts[255 - (bytes[j] as number)] = slot + 1;
        if (slot < k) { index[start + slot] = j; weight[start + slot] = bytes[j] as number; }
      }
    }
  });
  const arrays: Chunk["arrays"] = {
    weight: { dtype: "u8", shape: [H, Q, k], data: weight },
    rowmax: { dtype: "f32", shape: [H, Q], data: rowmax },
  };
  if (index) arrays.index = { dtype: index instanceof Uint16Array ? "u16" : "u32", shape: [H, Q, k], data: index };
  return { key, arrays };
}
