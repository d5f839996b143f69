// The model view weighted by value norm (`value_weighted`): each cell's thumbnail redrawn as
// α_ij‖f_h(x_j)‖ / Σ_k α_ik‖f_h(x_k)‖ from its layer's `vnorm:` chunk, and the toolbar's switch.
// A thumbnail cell that pools a block of queries and keys (inputs over 64 tokens) takes its
// keys' largest norm and its rows' smallest row sum: an upper bound the legend names.
import { h, type Listeners } from "../common";
import { VALUE_WEIGHT_LABEL, VALUE_WEIGHT_LEGEND, type ValueNorms } from "../value_weight";
import { THUMB_DECADES, thumbValue } from "./model_grid";
import { firstRow, streamNow, type ModelView } from "./model_state";

/** Where a thumbnail's `n` blocks start over `len` positions from `from` (encode/arrays.py's edges). */
const edges = (n: number, len: number, from = 0): number[] => Array.from({ length: n + 1 }, (_, i) => from + Math.floor((i * len) / n));

/** One value-weighted ratio as a thumbnail byte (encode/arrays.py `scale_thumbnails`). */
const byteOf = (ratio: number): number => (ratio > 0 ? Math.min(255, Math.max(1, Math.round(255 + (254 / THUMB_DECADES) * Math.log10(ratio)))) : 0);

/**
 * `thumbs` (u8 `(L, H, R, C)` on the thumbnails' log scale, each cell to its own largest weight)
 * weighted by each layer's value norms and rescaled, cell by cell, to its own largest value.
 * `queries` and `keys` are the lengths the cells cover; rows start at query `from`.
 */
export function weightThumbs(thumbs: Uint8Array, L: number, H: number, R: number, C: number, norms: readonly ValueNorms[], queries: number, keys: number, from = 0): Uint8Array {
  const out = new Uint8Array(thumbs.length);
  const rowEdges = edges(R, queries - from, from), colEdges = edges(C, keys);
  const cell = new Float64Array(R * C);
  for (let l = 0; l < L; l++) {
    const v = norms[l] as ValueNorms;
    for (let hd = 0; hd < H; hd++) {
      const colNorm = colEdges.slice(0, C).map((c0, j) => {
        let m = 0;
        for (let k = c0; k < Math.max(c0 + 1, colEdges[j + 1] as number); k++) m = Math.max(m, v.norm[hd * keys + k] as number);
        return m;
      });
      const rowSum = rowEdges.slice(0, R).map((r0, i) => {
        let m = Infinity;
        for (let q = r0; q < Math.max(r0 + 1, rowEdges[i + 1] as number); q++) {
          const s = v.rowsum[hd * queries + q] as number;
          if (s > 0) m = Math.min(m, s);
        }
        return m;
      });
      const base = (l * H + hd) * R * C;
      let peak = 0;
      for (let i = 0; i < R; i++) {
        for (let j = 0; j < C; j++) {
          const y = Number.isFinite(rowSum[i]) ? (thumbValue(thumbs[base + i * C + j] as number) * (colNorm[j] as number)) / (rowSum[i] as number) : 0;
          cell[i * C + j] = y;
          peak = Math.max(peak, y);
        }
      }
      for (let t = 0; t < R * C; t++) out[base + t] = peak > 0 ? byteOf((cell[t] as number) / peak) : 0;
    }
  }
  return out;
}

/** Every layer's value norms, once all are here; null while any loads, a string when they cannot be had. */
export function streamNorms(m: ModelView): ValueNorms[] | string | null {
  const s = m.ctx.store.get(), sm = streamNow(m);
  const all: ValueNorms[] = [];
  let waiting = false;
  for (let l = 0; l < sm.layers.length; l++) {
    const got = m.norms(s.stream, l, sm);
    if (typeof got === "string") return got;
    if (got === null) waiting = true;
    else all.push(got);
  }
  return waiting ? null : all;
}

/** Weighting applies: the switch is on and the cells are one trace's weights. */
export const valueWeighting = (m: ModelView): boolean => !m.signed && m.ctx.store.get().value_weighted && !!streamNow(m).has_value_norms;

/** The thumbnails' bytes as drawn: weighted by value norm when the switch says so (null while the norms load). */
export function shownThumbBytes(m: ModelView, bytes: Uint8Array, rows: number, cols: number): Uint8Array | null {
  if (!valueWeighting(m)) return bytes;
  const norms = streamNorms(m);
  if (norms === null) return null;
  if (typeof norms === "string") return bytes;
  const sm = streamNow(m), key = `${m.ctx.store.get().stream}:${firstRow(m)}`;
  if (m.weighted?.from !== bytes || m.weighted.key !== key) {
    m.weighted = { from: bytes, key, data: weightThumbs(bytes, sm.layers.length, sm.num_heads, rows, cols, norms, sm.q_len, sm.k_len, firstRow(m)) };
  }
  return m.weighted.data;
}

/** The legend's words for value-weighted cells (pooled cells say they are an upper bound). */
export function valueLegend(m: ModelView): string {
  if (!valueWeighting(m)) return "";
  const sm = streamNow(m), pooled = sm.thumb_rows < sm.q_len - firstRow(m) || sm.thumb_cols < sm.k_len;
  return ` · ${VALUE_WEIGHT_LEGEND}${pooled ? "; pooled cells: their keys' largest norm over their rows' smallest sum (an upper bound)" : ""}`;
}

/** The toolbar's "weight by value norm" switch (shown where the stream has value norms); returns its sync. */
export function valueSwitch(m: ModelView, L: Listeners): () => void {
  const { store } = m.ctx;
  const label = h("label", "attnscope-check", { title: `Draw each weight ${VALUE_WEIGHT_LEGEND}` });
  const input = h("input", "", { type: "checkbox", "data-testid": "model-value-weighted" });
  label.append(input, ` ${VALUE_WEIGHT_LABEL}`);
  m.dom.legend.before(label);
  L.on(input, "change", () => store.set({ value_weighted: input.checked }));
  return () => {
    label.hidden = m.signed || !streamNow(m).has_value_norms;
    input.checked = store.get().value_weighted;
  };
}
