// The neuron view's state, shared by its parts: neuron.ts mounts the elements,
// neuron_load.ts fetches q and k (and the recorded weights) and computes the rows,
// neuron_draw.ts writes them, neuron_events.ts answers the pointer, keys and store.
import { readTheme, type ThemeColors } from "../../colors";
import { defaultQuery, keySide, querySide, streamOf, type Side } from "../../tokens";
import type { AppState, Chunk, StreamMeta, ViewContext } from "../../wire/types";
import type { NeuronRows } from "./neuron_rows";

export interface RowEls { row: HTMLDivElement; label: HTMLSpanElement; tok: HTMLSpanElement; kc: HTMLCanvasElement; pc: HTMLCanvasElement; qk: HTMLSpanElement; bias: HTMLSpanElement; score: HTMLSpanElement; bar: HTMLSpanElement; w: HTMLSpanElement }

/** The elements the parts read and write. */
export interface NeuronDom {
  view: HTMLElement;
  bar: HTMLElement;
  status: HTMLElement;
  info: HTMLElement;
  qline: HTMLElement;
  qlabel: HTMLElement;
  qcanvas: HTMLCanvasElement;
  readout: HTMLElement;
  head: HTMLElement;
  headCells: HTMLElement[];
  viewport: HTMLElement;
  body: HTMLElement;
  sortSel: HTMLSelectElement;
  queryIn: HTMLInputElement;
  headSel: HTMLSelectElement;
}

/** One neuron view: its context, elements and what changes while it lives. */
export interface NeuronView {
  ctx: ViewContext;
  dom: NeuronDom;
  theme: ThemeColors;
  chunk: Chunk | null;
  chunkKey: string;
  /** The same head's `attn:` chunk: the weights the model returned, to check softmax(score) against. */
  recordedKey: string;
  rows: NeuronRows | null;
  rowsFor: string;
  order: Uint32Array;
  hoverDim: number;
  /** Row elements, reused as the list scrolls (only the visible rows exist). */
  pool: RowEls[];
  sideQ: Side;
  sideK: Side;
  /** Ask for a draw (coalesced by the view's scheduler). */
  redraw: () => void;
}

export function neuronState(ctx: ViewContext, dom: NeuronDom): NeuronView {
  const { meta, store, root } = ctx;
  const sm = streamOf(meta, store.get().stream);
  return {
    ctx, dom,
    theme: readTheme(root, store.get().resolved_theme === "dark"),
    chunk: null, chunkKey: "", recordedKey: "", rows: null, rowsFor: "",
    order: new Uint32Array(0), hoverDim: -1, pool: [],
    sideQ: querySide(meta, sm), sideK: keySide(meta, sm),
    redraw: () => undefined,
  };
}

export const st = (n: NeuronView): AppState => n.ctx.store.get();
export const streamNow = (n: NeuronView): StreamMeta => streamOf(n.ctx.meta, st(n).stream);

/** Heads of the current layer whose q and k an exported page left out (`_meta` says which). */
export const missingHeads = ({ meta, store }: ViewContext): readonly number[] => streamOf(meta, store.get().stream).qk_missing?.[store.get().layer] ?? [];

/** Why the view cannot be shown (no q/k in this trace or stream), or null. */
export function reason(n: NeuronView): string | null {
  if (n.ctx.meta.neuron_unavailable) return n.ctx.meta.neuron_unavailable;
  if (streamNow(n).head_dim == null) return "This trace has no q/k vectors for this stream (head_dim is null), so the neuron view cannot be shown.";
  return null;
}

export const sameSides = (n: NeuronView): boolean => streamNow(n).query_side === streamNow(n).key_side;

export function queryIdx(n: NeuronView): number {
  const q = st(n).query;
  return q != null && q >= 0 && q < streamNow(n).q_len ? q : defaultQuery(n.sideQ, streamNow(n));
}

/**
 * No query chosen (a new view, or a stream switch that cleared it): the view explains the
 * default one (js/tokens.ts defaultQuery); say so to the store, and so to w.query, as the image
 * view does. Nothing when the view cannot be shown.
 */
export function sayShownQuery(n: NeuronView): void {
  if (st(n).query == null && !reason(n)) n.ctx.store.set({ query: queryIdx(n) });
}
