// The model view's enlarged cell: the head's attention large, with its axes
// (queries down the left, keys along the top) and the tokens on them.
import { hex, type ThemeColors } from "../../colors";
import { canvasPainter } from "../../paint/canvas_painter";
import type { Tile } from "../../paint/painter";
import { imageLabel } from "../../label_text";
import type { Side } from "../../tokens";
import { sizeCanvas } from "../common";

/** Side of the heatmap itself. */
export const MAP = 200;
/** Room for the query labels (left) and the key labels (top, written upwards). */
export const AXIS_LEFT = 76;
export const AXIS_TOP = 70;
/** Closest two labels on an axis may be; more tokens than fit show every n-th. */
const LABEL_GAP = 11;
const LABEL_CHARS = 10;

/** Which tokens an axis of `n` over `span` pixels labels: all, or every n-th when they do not fit. */
export function axisTicks(n: number, span: number): number[] {
  if (n <= 0) return [];
  const every = Math.max(1, Math.ceil(LABEL_GAP / (span / n)));
  const out: number[] = [];
  for (let i = 0; i < n; i += every) out.push(i);
  return out;
}

/** A label as an axis draws it: trimmed, cut to fit, bidi-isolated. */
const short = (label: string): string => imageLabel(label.trim() || label, LABEL_CHARS);

export interface PreviewScene {
  /** The heatmap, placed at (AXIS_LEFT, AXIS_TOP), MAP × MAP. */
  tile: Tile | null;
  sideQ: Side;
  sideK: Side;
  theme: ThemeColors;
  /** The map's first row is this query (a generation's rows only); default 0. */
  firstQuery?: number;
}

/**
 * Draw the preview onto `canvas`: the heatmap, the axes' titles and the token
 * labels; the canvas's parent says how many labels each axis shows (`data-*-labels`).
 */
export function drawPreview(canvas: HTMLCanvasElement, s: PreviewScene): void {
  const dpr = window.devicePixelRatio || 1;
  const W = AXIS_LEFT + MAP + 4, H = AXIS_TOP + MAP + 4;
  const c = sizeCanvas(canvas, W, H, dpr);
  if (!c) return;
  const p = canvasPainter(c, s.theme.font, dpr);
  p.rect(0, 0, W, H, hex(s.theme.bg));
  if (s.tile) p.tiles([s.tile]);
  const fg = hex(s.theme.fg), muted = hex(s.theme.muted);
  const q0 = s.firstQuery ?? 0;
  const nQ = Math.max(0, s.sideQ.labels.length - q0), nK = s.sideK.labels.length;
  c.font = s.theme.font;
  c.fillStyle = fg;
  c.textBaseline = "middle";
  c.textAlign = "right";
  const ticksQ = axisTicks(nQ, MAP), ticksK = axisTicks(nK, MAP);
  const box = canvas.parentElement;
  if (box) {
    box.dataset.queryLabels = String(ticksQ.length);
    box.dataset.keyLabels = String(ticksK.length);
    box.dataset.axes = "queries ↓ keys →";
  }
  for (const i of ticksQ) c.fillText(short(s.sideQ.labels[q0 + i] ?? ""), AXIS_LEFT - 4, AXIS_TOP + ((i + 0.5) * MAP) / nQ);
  c.save();
  c.textAlign = "left";
  for (const j of ticksK) {
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.translate(AXIS_LEFT + ((j + 0.5) * MAP) / nK, AXIS_TOP - 4);
    c.rotate(-Math.PI / 2);
    c.fillText(short(s.sideK.labels[j] ?? ""), 0, 0);
  }
  c.restore();
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.fillStyle = muted;
  c.textAlign = "left";
  c.textBaseline = "top";
  c.fillText("keys →", 2, 2);
  c.fillText("queries ↓", 2, 16);
  c.strokeStyle = muted;
  c.lineWidth = 1;
  c.strokeRect(AXIS_LEFT - 0.5, AXIS_TOP - 0.5, MAP + 1, MAP + 1);
}
