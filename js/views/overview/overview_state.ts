// The overview's state, shared by its parts: overview.ts mounts the elements,
// overview_load.ts fetches and paints tiles, overview_draw.ts draws the map,
// overview_events.ts answers zoom, drag, clicks, the head select and the store.
import { readTheme, type ThemeColors } from "../../colors";
import { tileKey } from "../../wire/keys";
import { querySide, streamOf, type Side } from "../../tokens";
import type { StreamMeta, ViewContext } from "../../wire/types";
import { thumbLut } from "../model/model_grid";
import type { OverviewView, TilePlace } from "./overview_geometry";

/** The elements the parts read and write. */
export interface OverviewDom {
  panel: HTMLElement;
  title: HTMLElement;
  headSel: HTMLSelectElement;
  zoomIn: HTMLButtonElement;
  zoomOut: HTMLButtonElement;
  fit: HTMLButtonElement;
  where: HTMLElement;
  status: HTMLElement;
  canvas: HTMLCanvasElement;
  ramp: HTMLCanvasElement;
}

/** One overview: its context, elements and what changes while it lives. */
export interface Overview {
  ctx: ViewContext;
  dom: OverviewDom;
  theme: ThemeColors;
  lut: Uint8ClampedArray;
  /** The map's side in CSS pixels (0: fit again on the next draw). */
  side: number;
  /** The part of the matrix in view. */
  view: OverviewView;
  head: number | "mean";
  /** Painted tiles by key; a key in `asked` is on its way (or failed: `failed` says why). */
  images: Map<string, HTMLCanvasElement>;
  asked: Set<string>;
  failed: Map<string, string>;
  drag: { x: number; y: number; moved: boolean; from: OverviewView } | null;
  /** Rows the find box matched (a word's pieces, a phrase), outlined while the query is in them. */
  found: { from: number; to: number } | null;
  /** Ask for a draw (coalesced by the panel's scheduler). */
  redraw: () => void;
}

export function overviewState(ctx: ViewContext, dom: OverviewDom): Overview {
  const theme = readTheme(ctx.root, ctx.store.get().resolved_theme === "dark");
  return {
    ctx, dom, theme,
    lut: thumbLut(theme, "log"),
    side: 0,
    view: { x0: 0, y0: 0, scale: 1 },
    head: ctx.store.get().head,
    images: new Map(), asked: new Set(), failed: new Map(),
    drag: null,
    found: null,
    redraw: () => undefined,
  };
}

export const streamNow = (o: Overview): StreamMeta => streamOf(o.ctx.meta, o.ctx.store.get().stream);
export const labels = (o: Overview): readonly string[] => querySide(o.ctx.meta, streamNow(o)).labels;
/** The query side as the find box reads it (labels, word pieces). */
export const searchSide = (o: Overview): Side => querySide(o.ctx.meta, streamNow(o));
export const keyOf = (o: Overview, t: TilePlace): string => tileKey(o.ctx.store.get().stream, o.ctx.store.get().layer, o.head, t.level, t.row, t.col);
