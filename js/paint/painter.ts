// One drawing vocabulary for the screen, PNG and SVG. A view describes its
// picture once, as calls on a Painter; the canvas painter (screen, PNG) and the
// SVG painter (text) carry the same calls out, so an export cannot drift from
// what the view shows.

export type Align = "left" | "right" | "center";
export type Baseline = "middle" | "top" | "bottom";

export interface Stroke {
  color: string;
  width: number;
  /** Opacity, 1 when absent. */
  alpha?: number;
}

/** A raster tile (a heatmap cell): its place in CSS pixels and a callback that writes its pixels. */
export interface Tile {
  x: number;
  y: number;
  w: number;
  h: number;
  /** What the tile is, for a reader of the SVG. */
  title?: string;
  /** Write `w`×`h` RGBA pixels at (ox, oy) of `px`, a buffer `stride` pixels wide. */
  fill(px: Uint8ClampedArray, stride: number, ox: number, oy: number, w: number, h: number): void;
}

export interface Painter {
  rect(x: number, y: number, w: number, h: number, fill: string): void;
  strokeRect(x: number, y: number, w: number, h: number, stroke: Stroke): void;
  text(x: number, y: number, s: string, fill: string, align?: Align, baseline?: Baseline): void;
  /** Straight lines in one stroke: `each` calls `segment` once per line (one path on a canvas). */
  segments(stroke: Stroke, each: (segment: (x0: number, y0: number, x1: number, y1: number) => void) => void): void;
  /** Raster tiles; their pixels are written at the painter's resolution. */
  tiles(list: readonly Tile[]): void;
}

/** A picture described once, painted on the screen, into a PNG or into an SVG. */
export interface Picture {
  width: number;
  height: number;
  background: string;
  /** CSS font of its text. */
  font: string;
  /** Everything but the background. */
  paint(p: Painter): void;
}
