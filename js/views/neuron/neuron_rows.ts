// The neuron view's numbers for one query row: q·k per key, the score the model
// softmaxes, the weight, and how closely that reproduces the recorded weights.
// No DOM: tests/js/neuron.test.ts checks them directly.
import { arr } from "../../data";
import { maskRow, qkParts, scoreOf, softmaxRow } from "../../derive";
import type { Chunk } from "../../wire/types";

export { softmaxRow };

/** Everything the rows show for one (chunk, query), computed once. */
export interface NeuronRows {
  D: number;
  K: number;
  q: Float32Array;
  qk: Float64Array;
  score: Float64Array;
  weight: Float64Array;
  masked: Uint8Array;
  bias: Float64Array | null;
  scaling: number;
  softcap: number | null;
  sink: number | null;
  kvHead: number;
  maxQK: number;
  maxProd: number;
  /** Largest weight in the row: the bars are scaled to it. */
  maxWeight: number;
  /** max |softmax(score) − recorded weight| over the row, or |row max − recorded row max| (NaN until known). */
  recomputeError: number;
  /** The largest difference rounding can explain. */
  recordedTolerance: number;
  /** What the check compares: each weight with the recorded one-byte weights, or the row's largest weight with the recorded row maximum. */
  checkedBy: "weights" | "rowmax";
}

/**
 * The neuron view's numbers for one query row, checked against what the model
 * returned: the row maxima a page's `qk:` chunk carries (pages that derive their
 * weights), or else `recorded`, the `attn:` chunk of the same head (one byte per weight).
 */
export function neuronRows(chunk: Chunk, query: number, recorded?: Chunk | null): NeuronRows {
  const p = qkParts(chunk);
  const { D, K, k, scaling, softcap, sink } = p;
  const q = p.q.subarray(query * D, (query + 1) * D);
  const qk = new Float64Array(K), score = new Float64Array(K);
  const masked = maskRow(p, query, new Uint8Array(K));
  const bias = p.bias ? new Float64Array(K) : null;
  let maxQK = 0, maxProd = 0;
  for (const v of q) maxQK = Math.max(maxQK, Math.abs(v));
  for (let j = 0; j < K; j++) {
    let s = 0;
    for (let d = 0; d < D; d++) {
      const kv = k[j * D + d] as number;
      const prod = (q[d] as number) * kv;
      s += prod;
      maxQK = Math.max(maxQK, Math.abs(kv));
      maxProd = Math.max(maxProd, Math.abs(prod));
    }
    qk[j] = s;
    if (bias && p.bias) bias[j] = p.bias[query * K + j] as number;
    score[j] = scoreOf(p, query, j, s);
  }
  const weight = softmaxRow(score, masked, sink);
  const maxWeight = weight.reduce((a, b) => Math.max(a, b), 0);
  // q and k that travelled as float16 move each score by up to scaling · Σ|q_d k_d| · 2ρ,
  // and a weight by up to w · (e^(2·that) − 1).
  const rho = Math.max(arr(chunk, "q").rounding ?? 0, arr(chunk, "k").rounding ?? 0);
  let scoreError = 0;
  if (rho > 0) {
    for (let j = 0; j < K; j++) {
      let a = 0;
      for (let d = 0; d < D; d++) a += Math.abs((q[d] as number) * (k[j * D + d] as number));
      scoreError = Math.max(scoreError, Math.abs(scaling) * a * (2 * rho + rho * rho));
    }
  }
  const drift = maxWeight * Math.expm1(2 * scoreError) + 1e-6;
  let recomputeError = NaN, recordedTolerance = NaN;
  if (p.rowmax) {
    // The page's own check: the largest weight of the row, as the model gave it.
    recomputeError = Math.abs(maxWeight - (p.rowmax[query] as number));
    recordedTolerance = drift;
  } else if (recorded && !recorded.error && recorded.arrays.weight && recorded.arrays.rowmax) {
    // The recorded weights travel at one byte each (w ≈ byte/255 · rowmax), so they
    // can confirm the explanation to within rowmax/510, not to float precision.
    const bytes = recorded.arrays.weight.data, rowmax = recorded.arrays.rowmax.data[query] as number;
    recomputeError = 0;
    for (let j = 0; j < K; j++) {
      const w = ((bytes[query * K + j] as number) / 255) * rowmax;
      recomputeError = Math.max(recomputeError, Math.abs(w - (weight[j] as number)));
    }
    recordedTolerance = rowmax / 510 + drift;
  }
  return { D, K, q, qk, score, weight, masked, bias, scaling, softcap, sink, kvHead: p.kvHead, maxQK, maxProd, maxWeight, recomputeError, recordedTolerance, checkedBy: p.rowmax ? "rowmax" : "weights" };
}

/** Bar length as a fraction of the row's largest weight. */
export const barFrac = (w: number, r: NeuronRows): number => (r.maxWeight > 0 ? Math.max(0, Math.min(1, w / r.maxWeight)) : 0);
