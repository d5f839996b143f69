// The comparison neuron view's state, shared by its parts: compare_neuron.ts mounts
// the elements, compare_neuron_load.ts fetches both inputs' q/k and weights,
// compare_neuron_draw.ts writes the table and strips, compare_neuron_events.ts
// answers the table, the inputs and the store.
import { readTheme, type ThemeColors } from "../../colors";
import { defaultQuery, keySide, querySide, streamOf, type Side } from "../../tokens";
import { attnKey, qkKey, sideKey } from "../../wire/keys";
import type { AppState, Chunk, StreamMeta, ViewContext } from "../../wire/types";
import { neuronRows, type NeuronRows } from "../neuron/neuron_rows";

/** Both inputs' numbers for one query row, and what the view shows of them. */
export interface SideBySide {
  a: NeuronRows;
  b: NeuronRows;
  /** The key whose q×k strips are shown: the selected one, else the one whose weight changed most. */
  key: number;
  /** Largest |weight A − weight B| over the keys, for the bars. */
  maxChange: number;
}

/** The side-by-side numbers of one query row, from each input's `qk:` (and `attn:`, to check against) chunks. */
export function sideBySide(qkA: Chunk, qkB: Chunk, query: number, selectedKey: number | null, attnA?: Chunk | null, attnB?: Chunk | null): SideBySide {
  const a = neuronRows(qkA, query, attnA), b = neuronRows(qkB, query, attnB);
  let maxChange = 0, most = 0;
  for (let j = 0; j < a.K; j++) {
    const d = Math.abs((a.weight[j] as number) - (b.weight[j] as number));
    if (d > maxChange) { maxChange = d; most = j; }
  }
  const key = selectedKey != null && selectedKey >= 0 && selectedKey < a.K ? selectedKey : most;
  return { a, b, key, maxChange };
}

/** The elements the parts read and write. */
export interface CompareNeuronDom {
  view: HTMLElement;
  queryIn: HTMLInputElement;
  headIn: HTMLSelectElement;
  status: HTMLElement;
  info: HTMLElement;
  detail: HTMLElement;
  table: HTMLElement;
}

/** One comparison neuron view: its context, elements and what changes while it lives. */
export interface CompareNeuronView {
  ctx: ViewContext;
  dom: CompareNeuronDom;
  theme: ThemeColors;
  /** The keys last asked for, joined (a new layer or head asks again). */
  loadedFor: string;
  chunks: Record<string, Chunk | undefined>;
  /** Ask for a draw (coalesced by the view's scheduler). */
  redraw: () => void;
}

export function compareNeuronState(ctx: ViewContext, dom: CompareNeuronDom): CompareNeuronView {
  return {
    ctx, dom,
    theme: readTheme(ctx.root, ctx.store.get().resolved_theme === "dark"),
    loadedFor: "", chunks: {},
    redraw: () => undefined,
  };
}

export const st = (v: CompareNeuronView): AppState => v.ctx.store.get();
export const stream = (v: CompareNeuronView): StreamMeta => streamOf(v.ctx.meta, st(v).stream);
export const sides = (v: CompareNeuronView): { sideQ: Side; sideK: Side } =>
  ({ sideQ: querySide(v.ctx.meta, stream(v)), sideK: keySide(v.ctx.meta, stream(v)) });

/** The store's query, or the stream's default one when it has none (or one out of range). */
export function queryIdx(v: CompareNeuronView): number {
  const q = st(v).query;
  return q != null && q >= 0 && q < stream(v).q_len ? q : defaultQuery(sides(v).sideQ, stream(v));
}

/** The chunks of the store's layer and head: q/k and weights of each input. */
export function keysNow(v: CompareNeuronView): { qkA: string; qkB: string; attnA: string; attnB: string } {
  const s = st(v);
  return {
    qkA: sideKey("a", qkKey(s.stream, s.layer, s.head)), qkB: sideKey("b", qkKey(s.stream, s.layer, s.head)),
    attnA: sideKey("a", attnKey(s.stream, s.layer, s.head)), attnB: sideKey("b", attnKey(s.stream, s.layer, s.head)),
  };
}
