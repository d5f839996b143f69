// The neuron view's numbers for one query row: q·k per key, the score the model
// softmaxes, the weight, and how closely that reproduces the recorded weights.
// No DOM: tests/js/neuron.test.ts checks them directly.
import { arr } from "../data";
import type { Chunk, NDArray } from "../types";

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
  /** max |softmax(score) − recorded weight| over the row (NaN until the recorded weights load). */
  recomputeError: number;
  /** The largest difference one-byte rounding of the recorded weights can explain. */
  recordedTolerance: number;
}

/** softmax over the unmasked scores (a sink adds exp(sink) to the denominator only). */
export function softmaxRow(score: Float64Array, masked: Uint8Array, sink: number | null): Float64Array {
  let m = sink ?? -Infinity;
  for (let j = 0; j < score.length; j++) if (!masked[j] && (score[j] as number) > m) m = score[j] as number;
  const out = new Float64Array(score.length);
  let z = sink != null ? Math.exp(sink - m) : 0;
  for (let j = 0; j < score.length; j++) {
    const e = masked[j] ? 0 : Math.exp((score[j] as number) - m);
    out[j] = e;
    z += e;
  }
  for (let j = 0; j < out.length; j++) out[j] = z > 0 ? (out[j] as number) / z : 0;
  return out;
}

const scalar = (c: Chunk, name: string): number | null => {
  const a = c.arrays[name];
  return a && a.data.length ? (a.data[0] as number) : null;
};

/**
 * The neuron view's numbers for one query row. `recorded` is the `attn:` chunk of the
 * same head (one byte per weight): when given, softmax(score) is checked against it.
 */
export function neuronRows(chunk: Chunk, query: number, recorded?: Chunk | null): NeuronRows {
  const qA: NDArray = arr(chunk, "q"), kA = arr(chunk, "k");
  const D = qA.shape[1] as number, K = kA.shape[0] as number;
  const q = (qA.data as Float32Array).subarray(query * D, (query + 1) * D);
  const k = kA.data as Float32Array;
  const biasA = chunk.arrays.bias, maskA = chunk.arrays.mask;
  const scaling = scalar(chunk, "scaling") ?? 1;
  const softcap = scalar(chunk, "softcap");
  const rawSink = scalar(chunk, "sink");
  const sink = rawSink != null && Number.isFinite(rawSink) ? rawSink : null; // -inf: this layer has none
  const qk = new Float64Array(K), score = new Float64Array(K), weight = new Float64Array(K);
  const masked = new Uint8Array(K);
  const bias = biasA ? new Float64Array(K) : null;
  let maxQK = 0, maxProd = 0;
  for (const v of q) maxQK = Math.max(maxQK, Math.abs(v));
  for (let j = 0; j < K; j++) {
    let s = 0;
    for (let d = 0; d < D; d++) {
      const kv = k[j * D + d] as number;
      const p = (q[d] as number) * kv;
      s += p;
      maxQK = Math.max(maxQK, Math.abs(kv));
      maxProd = Math.max(maxProd, Math.abs(p));
    }
    qk[j] = s;
    let sc = s * scaling;
    if (bias && biasA) { bias[j] = biasA.data[query * K + j] as number; sc += bias[j] as number; }
    if (softcap) sc = softcap * Math.tanh(sc / softcap);
    score[j] = sc;
    masked[j] = maskA ? (maskA.data[query * K + j] as number) : 0;
  }
  weight.set(softmaxRow(score, masked, sink));
  const maxWeight = weight.reduce((a, b) => Math.max(a, b), 0);
  // The recorded weights travel at one byte each (w ≈ byte/255 · rowmax), so they
  // can confirm the explanation to within rowmax/510, not to float precision.
  let recomputeError = NaN, recordedTolerance = NaN;
  if (recorded && !recorded.error && recorded.arrays.weight && recorded.arrays.rowmax) {
    const bytes = recorded.arrays.weight.data, rowmax = recorded.arrays.rowmax.data[query] as number;
    recomputeError = 0;
    for (let j = 0; j < K; j++) {
      const w = ((bytes[query * K + j] as number) / 255) * rowmax;
      recomputeError = Math.max(recomputeError, Math.abs(w - (weight[j] as number)));
    }
    // q and k that travelled as float16 move each score by up to scaling · Σ|q_d k_d| · 2ρ,
    // and a weight by up to w · (e^(2·that) − 1).
    const rho = Math.max(qA.rounding ?? 0, kA.rounding ?? 0);
    let scoreError = 0;
    if (rho > 0) {
      for (let j = 0; j < K; j++) {
        let a = 0;
        for (let d = 0; d < D; d++) a += Math.abs((q[d] as number) * (k[j * D + d] as number));
        scoreError = Math.max(scoreError, Math.abs(scaling) * a * (2 * rho + rho * rho));
      }
    }
    recordedTolerance = rowmax / 510 + maxWeight * Math.expm1(2 * scoreError) + 1e-6;
  }
  return { D, K, q, qk, score, weight, masked, bias, scaling, softcap, sink, kvHead: scalar(chunk, "kv_head") ?? -1, maxQK, maxProd, maxWeight, recomputeError, recordedTolerance };
}

/** Bar length as a fraction of the row's largest weight. */
export const barFrac = (w: number, r: NeuronRows): number => (r.maxWeight > 0 ? Math.max(0, Math.min(1, w / r.maxWeight)) : 0);
