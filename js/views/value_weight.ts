// Attention weighted by value norm (Kobayashi et al. 2020), as a pure function over a
// layer's decoded rows: weight α_ij becomes α_ij ‖f_h(x_j)‖ / Σ_k α_ik ‖f_h(x_k)‖, the
// share of head h's output at query i that comes from key j. The two arrays are the
// `vnorm:<stream>:<layer>` chunk's (docs/protocol.md): `norm` (heads × keys) and `rowsum`
// (heads × queries), so the result is exact however few keys a row holds (top keys).
import type { Rows } from "./head/head_transform";

/** A `vnorm:` chunk's arrays: per head, every key's value norm and every query's weighted row sum. */
export interface ValueNorms {
  norm: Float32Array;
  rowsum: Float32Array;
}

/** `rows` weighted by value norm, renormalised per row (a row whose `rowsum` is 0 stays 0). */
export function valueWeighted(rows: Rows, v: ValueNorms): Rows {
  const value = new Float32Array(rows.value.length);
  for (let h = 0; h < rows.heads; h++) {
    for (let q = 0; q < rows.queries; q++) {
      const sum = v.rowsum[h * rows.queries + q] as number;
      if (!(sum > 0)) continue;
      const base = (h * rows.queries + q) * rows.slots;
      for (let t = 0; t < rows.slots; t++) {
        const key = rows.index ? (rows.index[base + t] as number) : t;
        value[base + t] = ((rows.value[base + t] as number) * (v.norm[h * rows.keys + key] as number)) / sum;
      }
    }
  }
  return { ...rows, value };
}

/** The legend's words for weights drawn this way. */
export const VALUE_WEIGHT_LEGEND = "weighted by value norm: α·‖f(x_j)‖, renormalised per row (Kobayashi et al. 2020)";
