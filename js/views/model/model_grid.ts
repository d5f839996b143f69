// The model view's grid, one row per layer and one column per head: its
// geometry, the pooling of thumbnails into pixels, and its picture as Painter calls.
import { hex, weightLut, type HeatScale, type ThemeColors } from "../../colors";
import type { Painter, Tile } from "../../paint/painter";

export const LABEL_W = 34;
export const LABEL_H = 16;
export const GAP = 2;

/** `band`: px under each row of cells for a ranking's badges (model_stats.ts), 0 without one. */
export interface GridGeometry { cell: number; width: number; height: number; band: number }

/** The badge band under a row of `cell`-px cells: a value bar, and its number where it fits. */
export const badgeBand = (cell: number): number => (cell >= 36 ? 17 : 5);

/** The grid's geometry; `badges` leaves a band under each row so badges never cover a cell. */
export function gridGeometry(layers: number, heads: number, avail: number, badges = false): GridGeometry {
  const cell = Math.max(10, Math.min(64, Math.floor((avail - LABEL_W) / heads) - GAP));
  const band = badges ? badgeBand(cell) : 0;
  return { cell, band, width: LABEL_W + heads * (cell + GAP), height: LABEL_H + layers * (cell + GAP + band) };
}

/** Vertical px from one row of cells to the next. */
export const rowStep = (geo: GridGeometry): number => geo.cell + GAP + geo.band;

/** Top-left corner of cell (layer l, head hd). */
export const cellOrigin = (geo: GridGeometry, l: number, hd: number): { x: number; y: number } =>
  ({ x: LABEL_W + hd * (geo.cell + GAP), y: LABEL_H + l * rowStep(geo) });

/**
 * The cell under (x, y) in grid coordinates, or null outside the grid. With
 * `order` (the cell index `l * heads + h` of each place, row by row) the cell placed there.
 */
export function cellAt(geo: GridGeometry, x: number, y: number, layers: number, heads: number, order?: readonly number[] | null): { l: number; h: number } | null {
  const gx = x - LABEL_W, gy = y - LABEL_H;
  if (gx < 0 || gy < 0 || geo.cell <= 0) return null;
  const hd = Math.floor(gx / (geo.cell + GAP)), l = Math.floor(gy / rowStep(geo));
  if (hd >= heads || l >= layers) return null;
  const cell = order?.[l * heads + hd];
  return cell === undefined ? { l, h: hd } : { l: Math.floor(cell / heads), h: cell % heads };
}

/** Top-left corner of where cell (l, hd) is drawn: its own place, or with `order` the place it is ranked at. */
export function placedOrigin(geo: GridGeometry, l: number, hd: number, heads: number, order?: readonly number[] | null): { x: number; y: number } {
  const slot = order ? order.indexOf(l * heads + hd) : -1;
  return slot < 0 ? cellOrigin(geo, l, hd) : cellOrigin(geo, Math.floor(slot / heads), slot % heads);
}

/**
 * Block-max pool a (rows × cols) u8 image into (outH × outW) RGBA pixels through `lut`.
 * `signed` images (a comparison's A − B, i8) keep each block's value of largest
 * magnitude and look it up at `128 + value`.
 */
export function poolInto(
  src: ArrayLike<number>, rows: number, cols: number, scale: ArrayLike<number> | null,
  out: Uint8ClampedArray, outStride: number, ox: number, oy: number, outW: number, outH: number, lut: Uint8ClampedArray,
  signed = false,
): void {
  for (let y = 0; y < outH; y++) {
    const r0 = Math.floor((y * rows) / outH), r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / outH));
    for (let x = 0; x < outW; x++) {
      const c0 = Math.floor((x * cols) / outW), c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / outW));
      let m = 0;
      for (let r = r0; r < r1; r++) {
        const sc = scale ? (scale[r] as number) : 1;
        for (let c = c0; c < c1; c++) { const v = (src[r * cols + c] as number) * sc; if (signed ? Math.abs(v) > Math.abs(m) : v > m) m = v; }
      }
      const li = (signed ? 128 + Math.max(-127, Math.min(127, Math.round(m))) : Math.min(255, Math.round(m))) * 4;
      const o = ((oy + y) * outStride + ox + x) * 4;
      out[o] = lut[li] as number; out[o + 1] = lut[li + 1] as number; out[o + 2] = lut[li + 2] as number; out[o + 3] = 255;
    }
  }
}

/** A (rows × cols) u8 (or `signed` i8) image as a tile of the given place, pooled through `lut`. */
export function heatmapTile(
  place: { x: number; y: number; w: number; h: number }, src: ArrayLike<number>, rows: number, cols: number,
  scale: ArrayLike<number> | null, lut: Uint8ClampedArray, title?: string, signed = false,
): Tile {
  return { ...place, title, fill: (px, stride, ox, oy, w, h) => poolInto(src, rows, cols, scale, px, stride, ox, oy, w, h, lut, signed) };
}

/** Decades of the `thumbs:` chunks' log scale (encode/arrays.py `THUMB_DECADES`; protocol.md). */
export const THUMB_DECADES = 6;

/** A `thumbs:` byte as a share of its cell's largest weight: 0 for byte 0, 10^-6 for byte 1, 1 for 255. */
export const thumbValue = (b: number): number => (b <= 0 ? 0 : 10 ** ((-THUMB_DECADES * (255 - b)) / 254));

/**
 * Colours of `thumbs:` bytes. Log: the six decades evenly, byte 1 a little above
 * the background; linear: the decoded weight, square-root lifted as `weightLut`.
 */
export function thumbLut(theme: ThemeColors, scale: HeatScale): Uint8ClampedArray {
  return weightLut(theme, (b) => (b <= 0 ? 0 : scale === "log" ? 0.08 + (0.92 * (b - 1)) / 254 : Math.sqrt(thumbValue(b))));
}

/**
 * Log-encoded thumbnails (`cols` bytes a row) with each row scaled to its own
 * largest cell: in the log domain a shift, so no precision is lost. A long
 * input's rows are each far fainter than a first-token peak; this is the
 * linear scale's picture of where every row looks.
 */
export function rowsToOwnMax(src: Uint8Array, cols: number): Uint8Array {
  const out = new Uint8Array(src.length);
  for (let at = 0; at < src.length; at += cols) {
    let m = 0;
    for (let c = at; c < at + cols; c++) if ((src[c] as number) > m) m = src[c] as number;
    const shift = 255 - m;
    for (let c = at; c < at + cols; c++) { const b = src[c] as number; out[c] = b ? b + shift : 0; }
  }
  return out;
}

/**
 * Every (layer, head) thumbnail, `rows` × `cols` each, in layer-major order (the `thumbs:` chunk).
 * A comparison's A − B is `signed`, each cell scaled by its `gain` (rows of it, one per thumbnail row).
 */
export interface Thumbnails { data: Uint8Array | Int8Array; rows: number; cols: number; signed?: boolean; gain?: (cell: number) => ArrayLike<number> }

export interface GridScene {
  geo: GridGeometry;
  /** The model's layer numbers, for labels. */
  layerNumbers: readonly number[];
  heads: number;
  thumbs: Thumbnails | null;
  lut: Uint8ClampedArray;
  theme: ThemeColors;
  /** The cell outlined: the selection's layer and head. */
  selected: { layer: number; head: number };
  /** Cells in this order, row by row (cell index `l * heads + h` per place), most changed first in a comparison; absent: by layer and head. */
  order?: readonly number[] | null;
  /**
   * Collapsed rows (model_segments.ts): each layer's cells (`heads` × rows × cols, in
   * place of `thumbs`), a sentence its row says instead (its chunk is not here), or null
   * while it loads.
   */
  layerCells?: ((l: number) => Thumbnails | string | null) | null;
  /** The order keeps each layer in its row (heads ranked within it, model_stats.ts): rows stay labelled by layer. */
  orderWithinLayers?: boolean;
}

/** The grid's picture (the background is the caller's): cells, labels, the selected cell's outline. */
export function paintGrid(p: Painter, s: GridScene): void {
  const { geo, heads, thumbs } = s;
  const layers = s.layerNumbers.length;
  const muted = hex(s.theme.muted);
  if (s.layerCells) paintLayerCells(p, s, s.layerCells, muted);
  else if (thumbs) {
    const { data, rows: R, cols: C } = thumbs;
    const tiles: Tile[] = [];
    for (let l = 0; l < layers; l++) {
      for (let hd = 0; hd < heads; hd++) {
        const cell = l * heads + hd, at = cell * R * C;
        const { x, y } = placedOrigin(geo, l, hd, heads, s.order);
        const gain = thumbs.gain?.(cell) ?? null;
        tiles.push(heatmapTile({ x, y, w: geo.cell, h: geo.cell }, data.subarray(at, at + R * C), R, C, gain, s.lut, `layer ${s.layerNumbers[l] ?? l} head ${hd}`, thumbs.signed));
      }
    }
    p.tiles(tiles);
  }
  // Ranked cells: a row starts at a rank, and its columns are no head in particular.
  const rowLabel = (l: number): string => (s.order && !s.orderWithinLayers ? `#${l * heads + 1}` : `L${s.layerNumbers[l] ?? l}`);
  for (let l = 0; l < layers; l++) p.text(LABEL_W - 4, cellOrigin(geo, l, 0).y + geo.cell / 2, rowLabel(l), muted, "right");
  // Head numbers only as often as they fit.
  const every = Math.ceil(22 / (geo.cell + GAP));
  if (!s.order) for (let hd = 0; hd < heads; hd += every) p.text(cellOrigin(geo, 0, hd).x + geo.cell / 2, LABEL_H / 2, String(hd), muted, "center");
  const sel = placedOrigin(geo, s.selected.layer, s.selected.head, heads, s.order);
  p.strokeRect(sel.x - 1, sel.y - 1, geo.cell + 2, geo.cell + 2, { color: hex(s.theme.fg), width: 2 });
}

/** Cells a layer at a time (collapsed rows): a layer without its cells says why across its row. */
function paintLayerCells(p: Painter, s: GridScene, cells: (l: number) => Thumbnails | string | null, muted: string): void {
  const { geo, heads } = s;
  const tiles: Tile[] = [];
  for (let l = 0; l < s.layerNumbers.length; l++) {
    const got = cells(l);
    if (typeof got === "string") {
      const { x, y } = cellOrigin(geo, l, 0);
      p.text(x + 2, y + geo.cell / 2, got, muted, "left");
      continue;
    }
    if (!got) continue;
    const { data, rows: R, cols: C } = got;
    for (let hd = 0; hd < heads; hd++) {
      const at = hd * R * C;
      const { x, y } = placedOrigin(geo, l, hd, heads, s.order);
      tiles.push(heatmapTile({ x, y, w: geo.cell, h: geo.cell }, data.subarray(at, at + R * C), R, C, null, s.lut, `layer ${s.layerNumbers[l] ?? l} head ${hd}`));
    }
  }
  p.tiles(tiles);
}
