// The image view's picture, described once on a Painter (screen, PNG and SVG):
// each grid's panel (the picture under its heatmap), the tile and cell lines,
// the hovered cell, and the legend under it all.
import { hex, type RGB, type ThemeColors } from "../../colors";
import { imageLabel } from "../../label_text";
import type { Painter, Picture } from "../../paint/painter";
import type { NDArray } from "../../wire/types";
import { fmt } from "../common";
import { CAPTION_H, heatAlpha, heatColor, heatOf, PICTURE_KEPT, rangeOf, type Hit, type Layout, type Panel } from "./image_geometry";

/** Height of the legend under the panels. */
export const LEGEND_H = 34;
const RAMP_W = 200;
/** Width of the legend's text beside the ramp: its longest line (63 characters) at the views' 11-px font. */
const LEGEND_TEXT_W = 360;

export interface ImagePaintState {
  layout: Layout;
  /** The pictures, `(height, width, 3)` u8, by image; null while loading. */
  pixels: readonly (NDArray | null)[];
  /** The query's weights over the chunk's columns; null: the pictures alone. */
  weights: Float32Array | null;
  /** One colour scale for every grid (their smallest to their largest weight) instead of one per grid. */
  shared?: boolean;
  theme: ThemeColors;
  hover: Hit | null;
}

/** A panel's pixels: the picture, under the heat of each cell (its weight between the grid's smallest and largest). */
function panelFill(panel: Panel, picture: NDArray | null, weights: Float32Array | null, theme: ThemeColors, range: Range) {
  const cells = panel.rows * panel.cols;
  // Per cell once: the heat colour premultiplied by its alpha, and what is left of the picture.
  const heat = new Float32Array(cells * 3), keep = new Float32Array(cells).fill(1);
  if (weights) {
    for (let c = 0; c < cells; c++) {
      const t = heatOf(weights[panel.column + c] as number, range);
      const a = heatAlpha(t), col = heatColor(t);
      keep[c] = PICTURE_KEPT * (1 - a);
      for (let k = 0; k < 3; k++) heat[c * 3 + k] = (col[k] as number) * a;
    }
  }
  const [ph, pw] = picture ? [picture.shape[0] ?? 1, picture.shape[1] ?? 1] : [1, 1];
  const data = picture?.data;
  return (px: Uint8ClampedArray, stride: number, ox: number, oy: number, w: number, h: number): void => {
    for (let j = 0; j < h; j++) {
      const sy = Math.min(ph - 1, Math.floor(((j + 0.5) / h) * ph));
      const row = Math.min(panel.rows - 1, Math.floor((j / h) * panel.rows));
      for (let i = 0; i < w; i++) {
        const sx = Math.min(pw - 1, Math.floor(((i + 0.5) / w) * pw));
        const cell = row * panel.cols + Math.min(panel.cols - 1, Math.floor((i / w) * panel.cols));
        const at = ((oy + j) * stride + ox + i) * 4;
        const from = (sy * pw + sx) * 3;
        for (let k = 0; k < 3; k++) {
          const v = data ? (data[from + k] as number) : (theme.grid[k] as number);
          px[at + k] = v * (keep[cell] as number) + (heat[cell * 3 + k] as number);
        }
        px[at + 3] = 255;
      }
    }
  };
}

/** Lines between cells (where cells are at least 6 px) and, stronger, between tiles. */
function gridLines(p: Painter, panel: Panel): void {
  const { x, y, w, h, rows, cols } = panel;
  if (w / cols >= 6 && h / rows >= 6) {
    p.segments({ color: "#ffffff", width: 0.5, alpha: 0.25 }, (seg) => {
      for (let r = 1; r < rows; r++) seg(x, y + (r * h) / rows, x + w, y + (r * h) / rows);
      for (let c = 1; c < cols; c++) seg(x + (c * w) / cols, y, x + (c * w) / cols, y + h);
    });
  }
  const t = panel.tiles;
  if (t && (t[0] > 1 || t[1] > 1)) {
    p.segments({ color: "#ffffff", width: 2, alpha: 0.9 }, (seg) => {
      for (let r = 1; r < t[0]; r++) seg(x, y + (r * h) / t[0], x + w, y + (r * h) / t[0]);
      for (let c = 1; c < t[1]; c++) seg(x + (c * w) / t[1], y, x + (c * w) / t[1], y + h);
    });
  }
}

/** The legend: the ramp from a grid's smallest weight (the picture dimmed) to its largest. */
function legend(p: Painter, y: number, theme: ThemeColors, shared: boolean): void {
  const fg = hex(theme.fg), steps = 64, w = RAMP_W / steps;
  for (let i = 0; i < steps; i++) {
    const t = i / (steps - 1), a = heatAlpha(t), c = heatColor(t);
    const base = PICTURE_KEPT * (1 - a) * 128; // over a mid-grey picture
    p.rect(i * w, y + 4, w + 0.5, 10, hex(c.map((v) => base + v * a) as RGB));
  }
  p.text(0, y + 18, shared ? "smallest of all" : "smallest", fg, "left", "top");
  p.text(RAMP_W, y + 18, "largest", fg, "right", "top");
  // Two short lines, so the legend never makes the picture wider than its panels need.
  const scale = shared ? "from the smallest weight of all grids to the largest" : "from its grid's smallest weight to its largest (range above it)";
  p.text(RAMP_W + 12, y + 2, "colour: the query's attention to each patch,", fg, "left", "top");
  p.text(RAMP_W + 12, y + 18, scale, fg, "left", "top");
}

/** The whole picture of the image view. */
type Range = { min: number; max: number };

/** The colour scale of each panel: its own grid's range, or every grid's when `shared`. */
export function panelRanges(s: Pick<ImagePaintState, "layout" | "weights" | "shared">): Range[] {
  const w = s.weights;
  if (!w) return s.layout.panels.map(() => ({ min: 0, max: 0 }));
  if (s.shared) { const all = rangeOf(w, 0, w.length); return s.layout.panels.map(() => all); }
  return s.layout.panels.map((p) => rangeOf(w, p.column, p.rows * p.cols));
}

export function imagePicture(s: ImagePaintState): Picture {
  const { layout, theme } = s;
  const ranges = panelRanges(s);
  const width = Math.max(layout.width, RAMP_W + LEGEND_TEXT_W);
  return {
    width,
    height: layout.height + LEGEND_H,
    background: hex(theme.bg),
    font: theme.font,
    paint(p) {
      const fg = hex(theme.fg);
      layout.panels.forEach((panel, i) => {
        // One tiles call per panel: a call's box is written whole, gaps included.
        const fill = panelFill(panel, s.pixels[panel.image] ?? null, s.weights, theme, ranges[i] as Range);
        p.tiles([{ x: panel.x, y: panel.y, w: panel.w, h: panel.h, title: panel.title, fill }]);
      });
      layout.panels.forEach((panel, i) => {
        const r = ranges[i] as Range;
        const range = s.weights ? ` · ${fmt(r.min)}–${fmt(r.max)}` : "";
        p.text(panel.x, panel.y - CAPTION_H + 3, imageLabel(panel.title + range, 64), fg, "left", "top");
        gridLines(p, panel);
      });
      const hit = s.hover;
      if (hit) {
        const { panel, row, col } = hit;
        const cw = panel.w / panel.cols, ch = panel.h / panel.rows;
        p.strokeRect(panel.x + col * cw, panel.y + row * ch, cw, ch, { color: hex(theme.accent), width: 2 });
      }
      legend(p, layout.height + 4, theme, !!s.shared);
    },
  };
}
