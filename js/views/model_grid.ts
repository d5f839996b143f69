// The model view's grid, one row per layer and one column per head: its
// geometry, the pooling of thumbnails into pixels, and its picture as Painter calls.
import { hex, type ThemeColors } from "../colors";
import type { Painter, Tile } from "../paint/painter";

export const LABEL_W = 34;
export const LABEL_H = 16;
export const GAP = 2;

export interface GridGeometry { cell: number; width: number; height: number }

export function gridGeometry(layers: number, heads: number, avail: number): GridGeometry {
  const cell = Math.max(10, Math.min(64, Math.floor((avail - LABEL_W) / heads) - GAP));
  return { cell, width: LABEL_W + heads * (cell + GAP), height: LABEL_H + layers * (cell + GAP) };
}

/** Top-left corner of cell (layer l, head hd). */
export const cellOrigin = (geo: GridGeometry, l: number, hd: number): { x: number; y: number } =>
  ({ x: LABEL_W + hd * (geo.cell + GAP), y: LABEL_H + l * (geo.cell + GAP) });

/** The cell under (x, y) in grid coordinates, or null outside the grid. */
export function cellAt(geo: GridGeometry, x: number, y: number, layers: number, heads: number): { l: number; h: number } | null {
  const gx = x - LABEL_W, gy = y - LABEL_H;
  if (gx < 0 || gy < 0 || geo.cell <= 0) return null;
  const hd = Math.floor(gx / (geo.cell + GAP)), l = Math.floor(gy / (geo.cell + GAP));
  if (hd >= heads || l >= layers) return null;
  return { l, h: hd };
}

/** Block-max pool a (rows × cols) u8 image into (outH × outW) RGBA pixels through `lut`. */
export function poolInto(
  src: ArrayLike<number>, rows: number, cols: number, scale: ArrayLike<number> | null,
  out: Uint8ClampedArray, outStride: number, ox: number, oy: number, outW: number, outH: number, lut: Uint8ClampedArray,
): void {
  for (let y = 0; y < outH; y++) {
    const r0 = Math.floor((y * rows) / outH), r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / outH));
    for (let x = 0; x < outW; x++) {
      const c0 = Math.floor((x * cols) / outW), c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / outW));
      let m = 0;
      for (let r = r0; r < r1; r++) {
        const sc = scale ? (scale[r] as number) : 1;
        for (let c = c0; c < c1; c++) { const v = (src[r * cols + c] as number) * sc; if (v > m) m = v; }
      }
      const li = Math.min(255, Math.round(m)) * 4;
      const o = ((oy + y) * outStride + ox + x) * 4;
      out[o] = lut[li] as number; out[o + 1] = lut[li + 1] as number; out[o + 2] = lut[li + 2] as number; out[o + 3] = 255;
    }
  }
}

/** A (rows × cols) u8 image as a tile of the given place, pooled through `lut`. */
export function heatmapTile(
  place: { x: number; y: number; w: number; h: number }, src: ArrayLike<number>, rows: number, cols: number,
  scale: ArrayLike<number> | null, lut: Uint8ClampedArray, title?: string,
): Tile {
  return { ...place, title, fill: (px, stride, ox, oy, w, h) => poolInto(src, rows, cols, scale, px, stride, ox, oy, w, h, lut) };
}

/** Every (layer, head) thumbnail, `rows` × `cols` each, in layer-major order (the `thumbs:` chunk). */
export interface Thumbnails { data: Uint8Array; rows: number; cols: number }

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
}

/** The grid's picture (the background is the caller's): cells, labels, the selected cell's outline. */
export function paintGrid(p: Painter, s: GridScene): void {
  const { geo, heads, thumbs } = s;
  const layers = s.layerNumbers.length;
  if (thumbs) {
    const { data, rows: R, cols: C } = thumbs;
    const tiles: Tile[] = [];
    for (let l = 0; l < layers; l++) {
      for (let hd = 0; hd < heads; hd++) {
        const at = (l * heads + hd) * R * C;
        const { x, y } = cellOrigin(geo, l, hd);
        tiles.push(heatmapTile({ x, y, w: geo.cell, h: geo.cell }, data.subarray(at, at + R * C), R, C, null, s.lut, `layer ${s.layerNumbers[l] ?? l} head ${hd}`));
      }
    }
    p.tiles(tiles);
  }
  const muted = hex(s.theme.muted);
  for (let l = 0; l < layers; l++) p.text(LABEL_W - 4, cellOrigin(geo, l, 0).y + geo.cell / 2, `L${s.layerNumbers[l] ?? l}`, muted, "right");
  // Head numbers only as often as they fit.
  const every = Math.ceil(22 / (geo.cell + GAP));
  for (let hd = 0; hd < heads; hd += every) p.text(cellOrigin(geo, 0, hd).x + geo.cell / 2, LABEL_H / 2, String(hd), muted, "center");
  const sel = cellOrigin(geo, s.selected.layer, s.selected.head);
  p.strokeRect(sel.x - 1, sel.y - 1, geo.cell + 2, geo.cell + 2, { color: hex(s.theme.fg), width: 2 });
}
