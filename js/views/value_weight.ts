// Attention weighted by value norm (Kobayashi et al. 2020), as a pure function over a
// layer's decoded rows: weight α_ij becomes α_ij ‖f_h(x_j)‖ / Σ_k α_ik ‖f_h(x_k)‖, the
// share of head h's output at query i that comes from key j. The two arrays are the
// `vnorm:<stream>:<layer>` chunk's (docs/protocol.md): `norm` (heads × keys) and `rowsum`
// (heads × queries), so the result is exact however few keys a row holds (top keys).
import { arr } from "../data";
import { valueNormsKey } from "../wire/keys";
import type { Chunk, DataSource, StreamMeta } from "../wire/types";
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

/** The switch's words in both views' toolbars. */
export const VALUE_WEIGHT_LABEL = "weight by value norm";

/** A layer's value norms: loaded, still loading (null), or why they cannot be had (a string). */
export type NormsState = ValueNorms | null | string;

/**
 * The `vnorm:` chunks a view weights by, one layer at a time, each asked for once;
 * `redraw` runs when one arrives. A stream without value norms answers why.
 */
export function valueNormsLoader(data: DataSource, redraw: () => void): (stream: string, layer: number, sm: StreamMeta) => NormsState {
  const asked = new Set<string>();
  const failed = new Map<string, string>(); // the chunk source keeps no errors: this loader does
  const read = (c: Chunk): NormsState => {
    if (c.error) return c.error;
    return { norm: arr(c, "norm").data as Float32Array, rowsum: arr(c, "rowsum").data as Float32Array };
  };
  return (stream, layer, sm) => {
    if (!sm.has_value_norms) return "this trace holds no value norms: capture it with value_norms=True";
    const key = valueNormsKey(stream, layer);
    const hit = data.peek(key);
    if (hit) return read(hit);
    const error = failed.get(key);
    if (error) return error;
    if (!asked.has(key)) {
      asked.add(key);
      data.request([key]).then((got) => {
        const c = got.get(key);
        if (c?.error) failed.set(key, c.error);
        redraw();
      }).catch(() => undefined);
    }
    return null;
  };
}
