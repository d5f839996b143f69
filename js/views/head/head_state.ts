// The head view's state, shared by its parts: head.ts mounts the elements,
// head_load.ts fetches the layer's rows, pseudo-heads and rollout, head_draw.ts
// paints the lines and token rows, head_events.ts answers the pointer and the store.
import type { Span } from "./head_search";
import { readTheme, type ThemeColors } from "../../colors";
import type { Generation } from "../../generation";
import { streamOf } from "../../tokens";
import type { AppState, Chunk, StreamMeta, ViewContext } from "../../wire/types";
import { h, widthOf, type Listeners } from "../common";
import {
  analysisControls, displayOf, offeredPseudo, pseudoColor, summedRows, type Analysed, type Display,
} from "./head_analysis";
import { layerRows, type LayerRows } from "./head_blocks";
import { analyseKept, type Kept } from "./head_kept";
import { headSwatches } from "./head_controls";
import { emptyLines, headLayout, topRowsOf, type HeadLayout, type Hover, type Lines, type TopRows } from "./head_lines";
import type { StepControl } from "./head_step";
import { defaultLineScale, faintNotice, scaleControl, type LineScale } from "./head_scale";
import type { TokenColumn } from "./head_tokens";
import { segmentPanel, segmentToggle, type SegmentPanel } from "./head_segments";
import { rolloutToggle } from "./head_rollout";
import { VALUE_WEIGHT_LEGEND, valueNormsLoader, type NormsState } from "../value_weight";

/** The elements and controls the parts read and write. */
export interface HeadDom {
  view: HTMLElement;
  bar: HTMLElement;
  swatchBox: HTMLElement;
  status: HTMLElement;
  viewport: HTMLElement;
  body: HTMLElement;
  canvas: HTMLCanvasElement;
  colQ: TokenColumn;
  colK: TokenColumn;
  scaleBox: ReturnType<typeof scaleControl>;
  faint: ReturnType<typeof faintNotice>;
  /** segments= (_meta.segments): rows are sentences or turns, in a panel of their own. */
  segPanel: SegmentPanel;
  segToggle: ReturnType<typeof segmentToggle>;
  swatches: ReturnType<typeof headSwatches>;
  analysis: ReturnType<typeof analysisControls>;
  rolloutBox: ReturnType<typeof rolloutToggle>;
}

/** What the controls made at mount call back into (the view's state is made after them). */
export interface HeadHooks {
  redraw: () => void;
  scale: (scale: LineScale) => void;
  rollout: (on: boolean) => void;
}

/** One head view: its context, elements and what changes while it lives. */
export interface HeadView {
  ctx: ViewContext;
  dom: HeadDom;
  /** A comparison's A − B: signed lines in diverging colours. */
  signed: boolean;
  /** The analysis switches apply to one trace's weights; a comparison's rows are aligned pairs. */
  analysing: boolean;
  /** The layer's rows, loaded a block at a time where the stream offers blocks. */
  top: LayerRows;
  /** Every row the last draw needed was loaded (else its lines, bars and numbers wait). */
  ready: boolean;
  /** The neighbouring layers were asked for, once this layer's rows were in. */
  prefetched: boolean;
  /** What the status line says about loading (so other messages are not cleared). */
  loadStatus: "loading" | "error" | null;
  hover: Hover;
  /** The rows the find box matched (a word's pieces, a phrase), marked while the query is in them. */
  found: Span | null;
  lines: Lines;
  theme: ThemeColors;
  colors: string[];
  generation: Generation | null;
  steps: StepControl | null;
  pairSelect: HTMLSelectElement | null;
  /** The view opens scrolled to a locked query (set before it was mounted). */
  revealPending: boolean;
  scale: LineScale;
  /** The scale is the view's own choice (not the reader's): it follows the stream, and the legend says why. */
  chosen: boolean;
  display: Display;
  pseudo: Chunk | null;
  pseudoChunkKey: string;
  /** The analysed rows of the blocks in so far, kept between draws (head_kept.ts). */
  analysed: Kept | null;
  /** Many heads on the log scale: each line's opacity is its strength to this power (head_scale.ts), set by each draw. */
  fade: number;
  /** The focused query's weight to each key (scratch, reused between draws). */
  keyW: Float32Array;
  /** Long self-attention: the locked query's rollout, computed by Python for that query alone. */
  rolloutOn: boolean;
  rollout: { key: string; chunk: Chunk | null } | null;
  rolloutLines: Lines;
  /** The `vnorm:` chunk of a layer (`value_weighted`): loaded, loading (null) or why not. */
  norms: (stream: string, layer: number, sm: StreamMeta) => NormsState;
  /** Ask for a draw (coalesced by the view's scheduler). */
  redraw: () => void;
}

export const st = (v: HeadView): AppState => v.ctx.store.get();
export const stream = (v: HeadView): StreamMeta => streamOf(v.ctx.meta, st(v).stream);

/** A comparison's signed lines keep the weight scale; a long input opens on the row scale (said in the legend). */
export const openingScale = (v: HeadView): LineScale => (v.signed ? "weight" : defaultLineScale(stream(v).k_len));

/** The elements and controls: toolbar, status, faint notice, token rows over the canvas, segments panel. */
export function mountHeadDom(ctx: ViewContext, L: Listeners, on: HeadHooks): HeadDom {
  const { meta, store, data, root } = ctx;
  const analysing = !meta.comparison;
  const sm = (): StreamMeta => streamOf(meta, store.get().stream);
  const view = h("div", "attnscope-view attnscope-headview", { "data-testid": "head-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const swatchBox = h("div", "attnscope-swatches", { role: "group", "aria-label": "Heads (click toggles, double-click shows only that head)" });
  const status = h("div", "attnscope-status");
  const viewport = h("div", "attnscope-hv-viewport", { "data-testid": "head-viewport" });
  const body = h("div", "attnscope-hv-body");
  const canvas = h("canvas", "attnscope-hv-canvas", { "data-testid": "head-canvas", "aria-hidden": "true" });
  const colQ: TokenColumn = { el: h("div", "attnscope-hv-col attnscope-hv-q", { "data-side": "query", "aria-label": "Query tokens" }), pool: [] };
  const colK: TokenColumn = { el: h("div", "attnscope-hv-col attnscope-hv-k", { "data-side": "key", "aria-label": "Key tokens" }), pool: [] };
  body.append(canvas, colQ.el, colK.el);
  viewport.append(body);
  const scaleBox = scaleControl(L, on.scale);
  const faint = faintNotice(L, () => on.scale("row"));
  view.append(bar, status, faint.el, viewport);
  root.append(view);
  const segPanel = segmentPanel(meta, store, data, L, on.redraw, status);
  const segToggle = segmentToggle(meta, store, L);
  view.append(segPanel.el);
  const swatches = headSwatches(swatchBox, L, store, () => sm().num_heads);
  const analysis = analysisControls(analysing ? bar : h("div"), L, store, () => (analysing ? offeredPseudo(sm()) : []), () => analysing && !!sm().has_value_norms);
  const rolloutBox = rolloutToggle(L, on.rollout);
  return { view, bar, swatchBox, status, viewport, body, canvas, colQ, colK, scaleBox, faint, segPanel, segToggle, swatches, analysis, rolloutBox };
}

export function headState(ctx: ViewContext, dom: HeadDom): HeadView {
  const { meta, store, data, root } = ctx;
  const signed = ctx.side === "diff";
  const analysing = !meta.comparison;
  const v: HeadView = {
    ctx, dom, signed, analysing,
    top: layerRows(data, () => v.redraw()),
    ready: false, prefetched: false, loadStatus: null,
    hover: null, found: null, lines: emptyLines(),
    theme: readTheme(root, store.get().resolved_theme === "dark"),
    colors: [], generation: null, steps: null, pairSelect: null,
    revealPending: store.get().query != null,
    scale: "weight", chosen: true,
    display: displayOf(meta, streamOf(meta, store.get().stream), analysing && store.get().words),
    pseudo: null, pseudoChunkKey: "", analysed: null,
    fade: 1, keyW: new Float32Array(0),
    rolloutOn: false, rollout: null, rolloutLines: emptyLines(),
    norms: valueNormsLoader(data, () => v.redraw()),
    redraw: () => undefined,
  };
  v.scale = openingScale(v);
  dom.scaleBox.select.value = v.scale;
  return v;
}

export const layout = (v: HeadView, width = widthOf(v.dom.viewport)): HeadLayout =>
  headLayout(v.display.sideQ.labels.length, v.display.sideK.labels.length, width, v.dom.viewport.scrollTop);

/** The query rows summed (shift-click), as display rows; [] for one query. */
export const summed = (v: HeadView): number[] => summedRows(v.display, st(v).queries);

/** The pseudo-heads shown, as line indices after the real heads. */
export function shownPseudo(v: HeadView): number[] {
  const offered = v.analysing ? offeredPseudo(stream(v)) : [];
  return st(v).pseudo_heads.map((p) => offered.indexOf(p)).filter((i) => i >= 0).map((i) => stream(v).num_heads + i);
}

/** The loaded layer through the analysis switches (recomputed only when one of them, or a chunk, changes). */
export function current(v: HeadView): Analysed | null {
  const rows = v.ready && v.analysing ? v.top.rows() : null;
  if (!rows) return null;
  const sm = stream(v), s = st(v), pseudo = v.pseudo;
  const withPseudo = s.pseudo_heads.length > 0 && !!pseudo && !pseudo.error;
  const keep = v.hover ? [] : summed(v);
  const values = valuesShown(v);
  // Weighting asked for but the norms still on their way: draw nothing rather than raw weights.
  if (values === null) return null;
  const weighted = typeof values === "object";
  // The layer and switches, not which of its blocks are in: each block is analysed once (head_kept.ts).
  const sig = [v.top.epoch(), withPseudo ? pseudo?.key : "", s.words, s.hide_special, s.log_scale, keep.join(","), weighted ? `${s.stream}:${s.layer}` : ""].join("|");
  v.analysed = analyseKept(v.analysed, sig, v.top.signature(), {
    top: rows, heads: sm.num_heads,
    pseudo: withPseudo && pseudo ? topRowsOf(pseudo, sm.q_len, sm.top_k) : null, pseudoHeads: offeredPseudo(sm).length,
    display: v.display, hide: s.hide_special, log: s.log_scale, keep,
    values: weighted ? values : null,
  }, v.top.loaded());
  return v.analysed.value;
}

/**
 * The value norms the weights are drawn with: the layer's (a `ValueNorms`), null while they
 * load, or false (raw weights: the switch is off, or the stream has none); the toolbar says which.
 */
function valuesShown(v: HeadView): NormsState | false {
  const s = st(v), sm = stream(v);
  if (!s.value_weighted || !v.analysing) {
    v.dom.analysis.sayValues(null);
    return false;
  }
  const got = v.norms(s.stream, s.layer, sm);
  if (typeof got === "string") {
    v.dom.analysis.sayValues(`raw weights: ${got}`);
    return false;
  }
  v.dom.analysis.sayValues(got ? VALUE_WEIGHT_LEGEND : "loading the value norms…");
  return got;
}

/** The lines are drawn weighted by value norm now (the switch is on and the layer's norms are here). */
export function valueWeightedNow(v: HeadView): boolean {
  const s = st(v);
  if (!s.value_weighted || !v.analysing || !stream(v).has_value_norms) return false;
  const got = v.norms(s.stream, s.layer, stream(v));
  return got !== null && typeof got === "object";
}

/** The rows the lines are drawn from (through the analysis switches where they apply); null while they load. */
export function loaded(v: HeadView): TopRows | null {
  if (!v.ready) return null;
  if (v.analysing) return current(v)?.lines ?? null;
  return v.top.rows();
}

export const shownHeads = (v: HeadView): number[] => [...st(v).heads.filter((x) => x >= 0 && x < stream(v).num_heads), ...shownPseudo(v)];
export const lineHeads = (v: HeadView): number => stream(v).num_heads + offeredPseudo(stream(v)).length;
/** The log switch applies (one trace's weights, not a comparison's). */
export const logOn = (v: HeadView): boolean => v.analysing && st(v).log_scale;

/** Head colours, then the pseudo-heads' colours (their lines come after the real heads). */
export const lineColors = (v: HeadView): string[] =>
  [...v.dom.swatches.build(v.theme.dark), ...offeredPseudo(stream(v)).map((p) => pseudoColor(p, v.theme.dark))];
