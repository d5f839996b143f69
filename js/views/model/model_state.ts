// The model view's state, shared by its parts: model.ts mounts the elements,
// model_load.ts fetches the chunks, model_draw.ts paints, model_events.ts answers
// the pointer and the store.
import { LONG_INPUT, readTheme, weightLut, type HeatScale, type ThemeColors } from "../../colors";
import { generationOf } from "../../generation";
import type { PixelScratch } from "../../paint/canvas_painter";
import { streamOf } from "../../tokens";
import type { Chunk, StatisticMeta, StreamMeta, ViewContext } from "../../wire/types";
import { divergingLut } from "../compare/compare_colors";
import { thumbLut, type GridGeometry } from "./model_grid";
import { valueNormsLoader, type NormsState } from "../value_weight";

/** The elements the parts read and write. */
export interface ModelDom {
  view: HTMLElement;
  bar: HTMLElement;
  only: HTMLElement;
  onlyBox: HTMLInputElement;
  /** "collapse images": the `segment_rows` trait, shown when the stream has segments. */
  seg: HTMLElement;
  segBox: HTMLInputElement;
  scaleSel: HTMLSelectElement;
  legend: HTMLElement;
  rankBy: HTMLSelectElement | null;
  status: HTMLElement;
  wrap: HTMLElement;
  canvas: HTMLCanvasElement;
  preview: HTMLElement;
  pcanvas: HTMLCanvasElement;
  pcap: HTMLElement;
}

export type Cell = { l: number; h: number };

/** One model view: its context, elements and what changes while it lives. */
export interface ModelView {
  ctx: ViewContext;
  dom: ModelDom;
  /** A comparison's A − B: signed thumbnails on the diverging scale. */
  signed: boolean;
  /** The ranking statistics (a comparison has none of its own: docs/protocol.md, "Comparisons"). */
  statistics: readonly StatisticMeta[];
  theme: ThemeColors;
  heat: HeatScale;
  /** Thumbnails are log-encoded bytes (protocol.md); a full-resolution preview is linear bytes. */
  lut: Uint8ClampedArray;
  attnLut: Uint8ClampedArray;
  thumbs: Chunk | null;
  loadedKey: string;
  stats: Chunk | null;
  statsLoaded: string;
  geo: GridGeometry;
  pixels: PixelScratch;
  /** Row-scaled copy of the loaded thumbnails' bytes, made once per chunk. */
  ownMax: { from: Uint8Array; data: Uint8Array } | null;
  hoverCell: Cell | null;
  /** The hovered cell's (query, key) segment and mass, in collapsed rows. */
  hoverPair: string | null;
  /** Collapsed rows (model_segments.ts): keys asked for, chunks here, their bytes per scale. */
  segAsked: Set<string>;
  segChunks: Map<string, Chunk>;
  segBytes: Map<string, { perRow: boolean; data: Uint8Array }>;
  /** A segments chunk arrived while a cell is hovered: redraw its preview. */
  onSegments: () => void;
  hoverTimer: ReturnType<typeof setTimeout> | null;
  /** The `vnorm:` chunk of a layer (`value_weighted`): loaded, loading (null) or why not. */
  norms: (stream: string, layer: number, sm: StreamMeta) => NormsState;
  /** Value-weighted copy of the loaded thumbnails' bytes (model_value.ts), made once per chunk and stream. */
  weighted: { from: Uint8Array; key: string; data: Uint8Array } | null;
  /** Show the store's `value_weighted` on the toolbar's switch. */
  syncValues: () => void;
  /** Ask for a draw (coalesced by the view's scheduler). */
  redraw: () => void;
}

/** Each widget's chosen colour scale, kept while its views are re-mounted (Head → Model). */
const chosenScale = new WeakMap<object, HeatScale>();

/** Remember `heat` as the scale of the widget whose store is `store`. */
export const keepScale = (store: object, heat: HeatScale): void => { chosenScale.set(store, heat); };

export function modelState(ctx: ViewContext, dom: ModelDom): ModelView {
  const signed = ctx.side === "diff";
  const m: ModelView = {
    ctx, dom, signed,
    statistics: ctx.meta.comparison ? [] : ctx.meta.statistics ?? [],
    theme: readTheme(ctx.root, ctx.store.get().resolved_theme === "dark"),
    heat: chosenScale.get(ctx.store) ?? "linear",
    lut: new Uint8ClampedArray(0),
    attnLut: new Uint8ClampedArray(0),
    thumbs: null, loadedKey: "", stats: null, statsLoaded: "",
    geo: { cell: 0, width: 0, height: 0, band: 0 },
    pixels: { image: null },
    ownMax: null, hoverCell: null, hoverPair: null, hoverTimer: null,
    segAsked: new Set(), segChunks: new Map(), segBytes: new Map(), onSegments: () => undefined,
    norms: valueNormsLoader(ctx.data, () => m.redraw()), weighted: null, syncValues: () => undefined,
    redraw: () => undefined,
  };
  setLuts(m);
  return m;
}

/** The colour tables for the theme and scale. */
export function setLuts(m: ModelView): void {
  m.lut = m.signed ? divergingLut(m.theme) : thumbLut(m.theme, m.heat);
  m.attnLut = m.signed ? divergingLut(m.theme) : weightLut(m.theme, m.heat);
}

/** Re-read the theme's colours (after a theme change). */
export function readModelTheme(m: ModelView): void {
  m.theme = readTheme(m.ctx.root, m.ctx.store.get().resolved_theme === "dark");
  setLuts(m);
}

export const streamNow = (m: ModelView): StreamMeta => streamOf(m.ctx.meta, m.ctx.store.get().stream);

/** First query row the cells show: the prompt's length when only generated rows are shown, else 0. */
export function firstRow(m: ModelView): number {
  const g = generationOf(m.ctx.meta, m.ctx.store.get().stream);
  return g && m.ctx.store.get().generated_only ? g.prompt : 0;
}

/** Linear scale of a long input: each row of a cell to its own largest weight (else a causal cell is its first row). */
export const perRow = (m: ModelView): boolean => !m.signed && m.heat === "linear" && streamNow(m).k_len > LONG_INPUT;
