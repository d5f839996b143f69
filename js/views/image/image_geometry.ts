// The image view's numbers, no DOM: where each grid's panel goes, which grid cell
// a point is in, a query's weights over the image tokens (one head, or the mean of
// several) from an `image:` chunk, which queries weigh a patch most, and the colour
// of a picture pixel under the heatmap.
import type { RGB } from "../../colors";
import { isolate } from "../../label_text";
import type { ImagesMeta } from "../../wire/types";

/** Largest side of an image's main panel and of an extra grid's (overview) panel, CSS px. */
export const MAIN_SIDE = 300;
export const EXTRA_SIDE = 150;
/** Room above a panel for its caption, and between panels. */
export const CAPTION_H = 18;
export const GAP = 16;

/** One heatmap: grid `grid` of image `image`, drawn over the picture in a box. */
export interface Panel {
  image: number;
  grid: number;
  x: number;
  y: number;
  w: number;
  h: number;
  rows: number;
  cols: number;
  /** Tiles (rows, cols) the grid is made of, or null. */
  tiles: [number, number] | null;
  /** Index of the grid's first cell among the `image:` chunk's columns. */
  column: number;
  title: string;
}

export interface Layout { panels: Panel[]; width: number; height: number }

/** What a grid is called under its panel: the tiles or the grid's size, or the extra grid's name. */
export function gridTitle(meta: ImagesMeta, image: number, grid: number): string {
  const g = meta.images[image]?.grids[grid];
  if (!g) return "";
  const name = `img${image}`;
  if (g.name !== "image") return `${name} · ${isolate(g.name)} ${g.rows}×${g.cols}`;
  const tiles = g.tiles ? ` in ${g.tiles[0]}×${g.tiles[1]} tiles` : "";
  return `${name} · ${g.rows}×${g.cols} patches${tiles}`;
}

/** The panels: one row per image, its whole grid first, then its extra grids (smaller), left to right. */
export function layoutPanels(meta: ImagesMeta, mainSide = MAIN_SIDE, extraSide = EXTRA_SIDE): Layout {
  const panels: Panel[] = [];
  let y = 0, width = 0, column = 0;
  meta.images.forEach((img, i) => {
    let x = 0, rowH = 0;
    img.grids.forEach((g, j) => {
      const side = j === 0 ? mainSide : extraSide;
      const scale = side / Math.max(img.width, img.height, 1);
      const w = Math.max(1, Math.round(img.width * scale)), h = Math.max(1, Math.round(img.height * scale));
      panels.push({ image: i, grid: j, x, y: y + CAPTION_H, w, h, rows: g.rows, cols: g.cols, tiles: g.tiles, column, title: gridTitle(meta, i, j) });
      column += g.positions.length;
      x += w + GAP;
      rowH = Math.max(rowH, h);
    });
    width = Math.max(width, x - GAP);
    y += CAPTION_H + rowH + GAP;
  });
  return { panels, width: Math.max(width, 1), height: Math.max(y - GAP, 1) };
}

export interface Hit { panel: Panel; row: number; col: number; /** Column of the `image:` chunk. */ column: number }

/** The grid cell under (x, y), or null off every panel. */
export function hitTest(layout: Layout, x: number, y: number): Hit | null {
  for (const p of layout.panels) {
    if (x < p.x || y < p.y || x >= p.x + p.w || y >= p.y + p.h) continue;
    const row = Math.min(p.rows - 1, Math.floor(((y - p.y) / p.h) * p.rows));
    const col = Math.min(p.cols - 1, Math.floor(((x - p.x) / p.w) * p.cols));
    return { panel: p, row, col, column: p.column + row * p.cols + col };
  }
  return null;
}

/** An `image:` chunk's arrays: u8 weight (heads, queries, columns), f32 rowmax (heads, queries). */
export interface ImageRows { weight: Uint8Array; rowmax: Float32Array; heads: number; queries: number; columns: number }

/** Weight of column `c` in query row `r` (a row of the chunk), mean over `heads`. */
export function weightAt(d: ImageRows, heads: readonly number[], r: number, c: number): number {
  let sum = 0;
  for (const hd of heads) sum += ((d.weight[(hd * d.queries + r) * d.columns + c] as number) / 255) * (d.rowmax[hd * d.queries + r] as number);
  return heads.length ? sum / heads.length : 0;
}

/** Query row `r`'s weights over every column, mean over `heads`. */
export function queryWeights(d: ImageRows, heads: readonly number[], r: number): Float32Array {
  const out = new Float32Array(d.columns);
  for (let c = 0; c < d.columns; c++) out[c] = weightAt(d, heads, r, c);
  return out;
}

/** The `k` query rows that weigh column `c` most (largest first; ties: the earlier row), weight > 0 only. */
export function topQueries(d: ImageRows, heads: readonly number[], c: number, k: number): { row: number; weight: number }[] {
  const all = Array.from({ length: d.queries }, (_, r) => ({ row: r, weight: weightAt(d, heads, r, c) }));
  return all.filter((e) => e.weight > 0).sort((a, b) => b.weight - a.weight || a.row - b.row).slice(0, k);
}

/** The smallest and largest of `w[from .. from + count)` (both 0 when empty). */
export function rangeOf(w: Float32Array, from: number, count: number): { min: number; max: number } {
  if (count <= 0) return { min: 0, max: 0 };
  let min = Infinity, max = -Infinity;
  for (let i = from; i < from + count; i++) { const v = w[i] as number; min = Math.min(min, v); max = Math.max(max, v); }
  return { min, max };
}

/**
 * Where weight `v` sits between a grid's smallest and largest weight (0..1): the heat of
 * its cell. A grid whose weights are all equal is all 1 when they are above 0, else all 0.
 */
export function heatOf(v: number, range: { min: number; max: number }): number {
  const span = range.max - range.min;
  if (!(span > 0)) return range.max > 0 ? 1 : 0;
  return Math.max(0, Math.min(1, (v - range.min) / span));
}

/** How bright the picture stays under no heat: dimmed, so that the heat stands out. */
export const PICTURE_KEPT = 0.6;

/** Stops of the heat ramp (magma-like: dark purple → red → yellow), t in 0..1. */
const STOPS: RGB[] = [[40, 11, 84], [140, 41, 129], [222, 73, 104], [254, 159, 109], [252, 253, 191]];

/** The ramp's colour at t (clamped to 0..1). */
export function heatColor(t: number): RGB {
  const x = Math.max(0, Math.min(1, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i, a = STOPS[i] as RGB, b = STOPS[i + 1] as RGB;
  return [0, 1, 2].map((k) => Math.round((a[k] as number) + ((b[k] as number) - (a[k] as number)) * f)) as RGB;
}

/** How much of the picture the heat covers at t: none at 0, most of it at the grid's largest weight. */
export const heatAlpha = (t: number): number => (t > 0 ? 0.1 + 0.65 * Math.sqrt(Math.min(1, t)) : 0);

/**
 * A picture pixel under the heatmap at t (a cell's weight ÷ the grid's largest): the
 * picture dimmed to PICTURE_KEPT, the heat colour laid over it with `heatAlpha(t)`; t = 0
 * leaves the dimmed picture, so where the query does not look the picture still shows.
 */
export function overlay(pixel: RGB, t: number): RGB {
  const a = heatAlpha(t), c = heatColor(t);
  return [0, 1, 2].map((k) => Math.round((pixel[k] as number) * PICTURE_KEPT * (1 - a) + (c[k] as number) * a)) as RGB;
}
