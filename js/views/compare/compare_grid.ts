// The model view of a comparison: A − B thumbnails on the diverging scale, the
// cells ranked by how much each head changed, and each cell's divergence.
import { arr } from "../../data";
import type { AppState, Chunk, Meta, Store, StreamMeta } from "../../wire/types";
import { fmt, h, type Listeners } from "../common";
import type { Thumbnails } from "../model/model_grid";

/**
 * A `diff/thumbs:` chunk as the grid paints it. Every cell is scaled to the
 * largest change in the whole grid, so a head that changed little stays pale.
 */
export function signedThumbnails(chunk: Chunk, sm: StreamMeta): Thumbnails {
  const thumbs = arr(chunk, "thumbs"), absmax = arr(chunk, "absmax").data;
  const rows = thumbs.shape[2] ?? sm.thumb_rows, cols = thumbs.shape[3] ?? sm.thumb_cols;
  let max = 0;
  for (const v of absmax) max = Math.max(max, v);
  const gains = Array.from(absmax, (v) => new Float32Array(rows).fill(max > 0 ? v / max : 0));
  return { data: thumbs.data as Int8Array, rows, cols, signed: true, gain: (cell) => gains[cell] ?? new Float32Array(rows) };
}

/** The stream's cells most changed first (cell index `layer position × heads + head`); null outside a comparison. */
export function rankingOrder(meta: Meta, stream: string): number[] | null {
  const ranking = meta.comparison?.ranking[stream];
  const sm = meta.streams[stream];
  if (!ranking || !sm) return null;
  return ranking.map(([l, hd]) => l * sm.num_heads + hd);
}

/** The grid's order for the store's setting: by layer (null) or most changed first. */
export function gridOrder(meta: Meta, s: AppState): number[] | null {
  return s.grid_order === "divergence" ? rankingOrder(meta, s.stream) : null;
}

/** " · JS divergence 0.012 (rank 3 of 72)" for a cell of a comparison; "" otherwise. */
export function divergenceNote(meta: Meta, stream: string, l: number, hd: number): string {
  const c = meta.comparison;
  const v = c?.divergence[stream]?.[l]?.[hd];
  if (!c || v === undefined) return "";
  if (v === null) return " · no aligned row to compare";
  const ranking = c.ranking[stream] ?? [];
  const rank = ranking.findIndex(([rl, rh]) => rl === l && rh === hd);
  return ` · JS divergence ${fmt(v)} nats${rank >= 0 ? ` (rank ${rank + 1} of ${ranking.length})` : ""}`;
}

/** The comparison's grid order, bound to the store (it outlives the view, which a side switch rebuilds). */
export function gridOrderSelect(L: Listeners, store: Store<AppState>): HTMLSelectElement {
  const sel = h("select", "attnscope-select", { "aria-label": "Order of the cells", "data-testid": "grid-order" });
  for (const [value, label] of [["layers", "cells: by layer"], ["divergence", "cells: most changed first"]] as const) {
    const o = h("option", "", { value });
    o.textContent = label;
    sel.append(o);
  }
  sel.value = store.get().grid_order ?? "layers";
  L.on(sel, "change", () => store.set({ grid_order: sel.value as "layers" | "divergence" }));
  return sel;
}
