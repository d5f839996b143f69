// The rollout of the locked query on a long input. Past 1024 tokens the head view
// cannot hold every query's rollout (a product of two N × N matrices per layer), so
// it asks Python for the locked query's row alone (`pseudo:<s>:<l>:<query>`, a row
// vector times each layer's attention, a block of rows at a time) and draws it over
// the heads' lines in the text colour.
import { arr } from "../../data";
import type { Chunk } from "../../wire/types";
import { h, type Listeners } from "../common";
import type { TopRows } from "./head_lines";

/** The checkbox that turns the locked query's rollout on. */
export function rolloutToggle(L: Listeners, onChange: (on: boolean) => void): { el: HTMLElement; box: HTMLInputElement } {
  const box = h("input", "", { type: "checkbox", "data-testid": "head-rollout" });
  const el = h("label", "attnscope-check", { title: "Attention rollout (Abnar & Zuidema) of the locked query through this layer, drawn in the text colour; click a query to lock it" });
  el.append(box, " rollout of the locked query");
  L.on(box, "change", () => onChange(box.checked));
  return { el, box };
}

/**
 * A one-row `pseudo:<s>:<l>:<query>` chunk as rows of every one of `queries` queries,
 * only row `query` holding keys (the line collector reads rows by query index).
 */
export function queryRolloutRows(chunk: Chunk, queries: number, query: number): TopRows {
  const weight = arr(chunk, "weight"), rowmax = arr(chunk, "rowmax").data;
  const slots = weight.shape[2] ?? weight.data.length;
  const index = chunk.arrays.index?.data ?? null;
  const w = new Uint8Array(queries * slots), rm = new Float32Array(queries);
  const idx = index ? new Uint32Array(queries * slots) : null;
  w.set(weight.data.subarray(0, slots) as Uint8Array, query * slots);
  if (idx && index) idx.set(index.subarray(0, slots), query * slots);
  rm[query] = rowmax[0] as number;
  return { index: idx, weight: w, rowmax: rm, queries, slots };
}
