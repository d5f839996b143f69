// The image view's state, shared by its parts: image.ts mounts the elements,
// image_load.ts fetches the pictures and the layer's weights, image_draw.ts paints
// and writes, image_events.ts answers the pointer, the selects and the store.
import { readTheme, type ThemeColors } from "../../colors";
import { pixelsKey } from "../../wire/keys";
import { generationOf, type Generation } from "../../generation";
import type { Picture } from "../../paint/painter";
import { querySide, streamOf, type Side } from "../../tokens";
import type { Chunk, ImagesMeta, NDArray, StreamMeta, ViewContext } from "../../wire/types";
import type { StepControl } from "../head/head_step";
import { layoutPanels, queryWeights, type Hit, type ImageRows, type Layout } from "./image_geometry";
import { imagePicture } from "./image_paint";

/** How the heads are combined: the store's selected heads, every head's mean, or one head. */
export type HeadChoice = "selected" | "mean" | number;

/** The elements the parts read and write. */
export interface ImageDom {
  view: HTMLElement;
  bar: HTMLElement;
  headSel: HTMLSelectElement;
  scaleSel: HTMLSelectElement;
  status: HTMLElement;
  info: HTMLElement;
  strip: HTMLElement;
  canvas: HTMLCanvasElement;
  hover: HTMLElement;
  step: StepControl | null;
}

/** What the view shows, fixed for its life: the images, their stream, token side and layout. */
export interface ImageScene {
  images: ImagesMeta;
  sm: StreamMeta;
  side: Side;
  gen: Generation | null;
  layout: Layout;
  pixelKey: string;
  firstImageToken: number;
}

/** One image view: its context, elements, scene and what changes while it lives. */
export interface ImageView extends ImageScene {
  ctx: ViewContext;
  dom: ImageDom;
  theme: ThemeColors;
  pixels: (NDArray | null)[];
  chunk: Chunk | null;
  chunkKey: string;
  /** Why the pictures could not be loaded (kept on screen when a layer's weights arrive), or null. */
  pixelsError: string | null;
  hit: Hit | null;
  choice: HeadChoice;
  /** Ask for a draw (coalesced by the view's scheduler). */
  redraw: () => void;
}

export function imageScene(ctx: ViewContext): ImageScene {
  const images = ctx.meta.images as ImagesMeta;
  const sm = streamOf(ctx.meta, images.stream);
  return {
    images, sm,
    side: querySide(ctx.meta, sm),
    gen: generationOf(ctx.meta, images.stream),
    layout: layoutPanels(images),
    pixelKey: pixelsKey(images.stream),
    // A loop, not Math.min(...): a grid may hold more positions than a call takes arguments.
    firstImageToken: images.images.reduce((m, im) => im.grids.reduce((n, gr) => gr.positions.reduce((o, p) => Math.min(o, p), n), m), Infinity),
  };
}

export function imageState(ctx: ViewContext, scene: ImageScene, dom: ImageDom): ImageView {
  return {
    ...scene, ctx, dom,
    theme: readTheme(ctx.root, ctx.store.get().resolved_theme === "dark"),
    pixels: scene.images.images.map(() => null),
    chunk: null, chunkKey: "", pixelsError: null, hit: null,
    choice: "selected",
    redraw: () => undefined,
  };
}

export function rowsOf(chunk: Chunk | null): ImageRows | null {
  const w = chunk?.arrays.weight, m = chunk?.arrays.rowmax;
  if (!chunk || chunk.error || !w || !m) return null;
  return { weight: w.data as Uint8Array, rowmax: m.data as Float32Array, heads: w.shape[0] ?? 0, queries: w.shape[1] ?? 0, columns: w.shape[2] ?? 0 };
}

/** The heads the heatmap averages. */
export function heads(v: ImageView): number[] {
  const n = v.sm.num_heads;
  if (v.choice === "mean") return Array.from({ length: n }, (_, i) => i);
  if (typeof v.choice === "number") return [v.choice];
  return v.ctx.store.get().heads.filter((x) => x >= 0 && x < n);
}

export function headWords(v: ImageView): string {
  const hs = heads(v);
  if (typeof v.choice === "number") return `head ${v.choice}`;
  return hs.length === v.sm.num_heads ? `mean of all ${hs.length} heads` : `mean of heads ${hs.join(", ")}`;
}

/** The query: the store's when it shows no image, else the last text token. */
export function query(v: ImageView): number {
  const q = v.ctx.store.get().query;
  const qs = v.images.queries;
  return q != null && qs.includes(q) ? q : (qs[qs.length - 1] ?? 0);
}

/** The query's weights over the chunk's columns; null while they load. */
export function weights(v: ImageView): Float32Array | null {
  const d = rowsOf(v.chunk);
  const r = v.images.queries.indexOf(query(v));
  return d && r >= 0 ? queryWeights(d, heads(v), r) : null;
}

export const picture = (v: ImageView): Picture => imagePicture({ layout: v.layout, pixels: v.pixels, weights: weights(v), theme: v.theme, hover: v.hit, shared: v.dom.scaleSel.value === "shared" });
