// The neuron view's drawing as Painter calls: the per-dimension strips (on
// screen, a small canvas each) and the exported picture of the visible rows,
// which paints the same strips.
import { diverging, hex, type ThemeColors } from "../../colors";
import { imageLabel } from "../../label_text";
import type { Painter, Picture } from "../../paint/painter";
import { fmt, fmtWeight } from "../common";
import { barFrac, type NeuronRows } from "./neuron_rows";

/** Height of a key row. */
export const NROW = 20;
/** Height of a strip: a row less its padding. */
export const STRIP_H = NROW - 4;

/** Width of one dimension's cell: 1 to 8 px, so a strip stays within 160 px and a row fits a notebook. */
export const cellW = (D: number): number => Math.max(1, Math.min(8, Math.floor(160 / Math.max(1, D))));

/** One cell per dimension on the diverging scale around 0, scaled to `max`; dimension `hoverDim` outlined (-1: none). */
export function paintStrip(p: Painter, x: number, y: number, D: number, value: (d: number) => number, max: number, theme: ThemeColors, hoverDim = -1): void {
  const cw = cellW(D);
  for (let d = 0; d < D; d++) p.rect(x + d * cw, y, cw, STRIP_H, diverging(value(d), max, theme));
  if (hoverDim >= 0 && hoverDim < D) p.strokeRect(x + hoverDim * cw + 0.5, y + 0.5, Math.max(1, cw - 1), STRIP_H - 1, { color: hex(theme.fg), width: 1 });
}

export interface RowsScene {
  rows: NeuronRows;
  /** Every key vector, K × D. */
  k: Float32Array;
  /** The keys shown, top to bottom. */
  keys: readonly number[];
  queryLabel: string;
  keyLabel: (j: number) => string;
  theme: ThemeColors;
}

const LABEL_W = 110, GAP_X = 8;
/** Characters of a label that fit in LABEL_W at the views' font. */
const LABEL_CHARS = 14;

/** The rows as one picture: q on top, then per key its k, q×k, q·k, score and weight bar. */
export function rowsPicture(s: RowsScene): Picture {
  const r = s.rows;
  const sw = r.D * cellW(r.D);
  const cK = LABEL_W, cProd = cK + sw + GAP_X, cQK = cProd + sw + GAP_X, cScore = cQK + 70, cWeight = cScore + 70;
  const fg = hex(s.theme.fg);
  return {
    width: cWeight + 140,
    height: (s.keys.length + 2) * NROW,
    background: hex(s.theme.bg),
    font: s.theme.font,
    paint(p) {
      p.text(0, NROW / 2, `q (${imageLabel(s.queryLabel, LABEL_CHARS - 4)})`, fg);
      paintStrip(p, cK, 2, r.D, (d) => r.q[d] as number, r.maxQK, s.theme);
      // The column headers, as the view shows them above its rows.
      const head = NROW + NROW / 2, muted = hex(s.theme.muted);
      for (const [x, text] of [[0, "key"], [cK, "k"], [cProd, "q × k"], [cQK, "q · k"], [cScore, "score"], [cWeight, "weight"]] as const) {
        p.text(x, head, text, muted);
      }
      s.keys.forEach((j, i) => {
        const y = (i + 2) * NROW, mid = y + NROW / 2;
        const kv = (d: number): number => s.k[j * r.D + d] as number;
        p.text(0, mid, imageLabel(s.keyLabel(j), LABEL_CHARS), fg);
        paintStrip(p, cK, y + 2, r.D, kv, r.maxQK, s.theme);
        paintStrip(p, cProd, y + 2, r.D, (d) => (r.q[d] as number) * kv(d), r.maxProd, s.theme);
        p.text(cQK, mid, fmt(r.qk[j] as number), fg);
        p.text(cScore, mid, r.masked[j] ? "masked" : fmt(r.score[j] as number), fg);
        p.rect(cWeight, y + 4, 80 * barFrac(r.weight[j] as number, r), NROW - 8, hex(s.theme.accent));
        p.text(cWeight + 84, mid, fmtWeight(r.weight[j] as number), fg);
      });
    },
  };
}
