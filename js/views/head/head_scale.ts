// The head view's scale, said in words: what a line's strength and a key bar's
// full length mean, a way to see rows whose weights are all tiny (long inputs),
// and the caption an exported image carries.
import { LONG_INPUT } from "../../colors";
import { imageLabel, isolate } from "../../label_text";
import { fmt, h, type Listeners } from "../common";
import { BUCKETS, bucketOf, lineWidth, ROW, type HeadLayout, type Lines } from "./head_lines";
import { LOG_DECADES } from "./head_transform";

/** "weight": strength = the weight itself (full = 1); "row": weight ÷ its row's largest. */
export type LineScale = "weight" | "row";

/** The scale select and its legend, for the toolbar. */
export function scaleControl(L: Listeners, onChange: (scale: LineScale) => void): { el: HTMLElement; select: HTMLSelectElement; legend: HTMLElement } {
  const select = h("select", "attnscope-select", { "aria-label": "Line scale", "data-testid": "head-scale-select" });
  for (const [value, label] of [["weight", "scale: weight"], ["row", "scale: ÷ row max"]] as const) {
    const o = h("option", "", { value });
    o.textContent = label;
    select.append(o);
  }
  L.on(select, "change", () => onChange(select.value as LineScale));
  const legend = h("span", "attnscope-scale", { "data-testid": "head-scale" });
  const el = h("span", "attnscope-scalebox");
  el.append(select, legend);
  return { el, select, legend };
}

/**
 * The scale a view opens with: past `LONG_INPUT` keys each row to its own largest
 * weight (a row that spreads over thousands of keys has every weight under 1/255:
 * at the weight scale it would draw nothing), else the weight.
 */
export const defaultLineScale = (keys: number): LineScale => (keys > LONG_INPUT ? "row" : "weight");

/**
 * What full strength means now; `rowMax` is the focused query's largest weight
 * (null: no query focused); `chosenFor`, the key count when the view chose the scale itself;
 * `log`, the lines' fade exponent (`logFade`) when the log switch is on.
 */
export function scaleLegend(scale: LineScale, rowMax: number | null, chosenFor: number | null = null, log: number | null = null): string {
  if (log != null) return logLegend(scale, log);
  const why = chosenFor != null && scale === "row" ? ` (chosen for ${chosenFor} tokens: past ${LONG_INPUT}, a row's weights are each too faint to draw as weights)` : "";
  if (scale === "weight") return "lines and key bars: the weight (full = 1)";
  return (rowMax == null ? "lines: weight ÷ each query's largest" : `lines and key bars: weight ÷ row max (row max = ${fmt(rowMax)})`) + why;
}

/** The log scale's range in words, for three decades "0.001 (clear) … 1 (full)". */
const LOG_RANGE = `${10 ** -LOG_DECADES} (clear) … 1 (full)`;

function logLegend(scale: LineScale, fade: number): string {
  const range = scale === "row" ? `${LOG_RANGE}, then ÷ each row's largest` : LOG_RANGE;
  const faded = fade > 1 ? ` · several heads: opacity = strength^${fade.toFixed(1)} (weak links fade)` : "";
  return `lines and key bars on a log scale: ${range}${faded}`;
}

/**
 * How much ink the lines area may take when the log scale shows several heads:
 * the lines' opacity × length × width, summed, over the area. At 1 every pixel
 * would get one full-strength stroke on average (a solid panel).
 */
export const INK_TARGET = 0.6;
/** The strongest fade: a full line stays full, a weight of 0.5 (0.9 on the log scale) keeps 0.18. */
export const MAX_FADE = 16;

/** Each opacity step's total line length (CSS px), for `inkCover`. */
export function stepLengths(lines: Lines, layout: HeadLayout): Float64Array {
  const out = new Float64Array(BUCKETS), dx = layout.x1 - layout.x0;
  for (let i = 0; i < lines.n; i++) {
    const b = bucketOf(lines.w[i] as number);
    out[b] = (out[b] as number) + Math.hypot(dx, (lines.yk[i] as number) - (lines.yq[i] as number));
  }
  return out;
}

/** The ink of lines with `lengths` per opacity step at fade `fade`, as a share of `area` (may pass 1: overlaps add). */
export function inkCover(lengths: ArrayLike<number>, width: number, area: number, fade: number): number {
  let ink = 0;
  for (let b = 0; b < lengths.length; b++) ink += lineAlpha((b + 0.5) / BUCKETS, fade) * (lengths[b] as number) * width;
  return area > 0 ? ink / area : 0;
}

/**
 * The exponent a line's strength is raised to for its opacity (`lineAlpha`): 1
 * (opacity = strength) unless the log scale is on and several heads are shown.
 * The log scale lifts every weight above 0.001, so each head's lines cover
 * nearly every (query, key) pair, and twelve heads at that opacity paint the
 * panel solid. Then the smallest exponent (to one decimal, at most `MAX_FADE`)
 * that keeps the lines' ink under `INK_TARGET`: a full-strength line stays
 * full, weaker ones fade the more the lower they are, so the strongest links
 * stand out. A focused query's few lines need no fade and get none.
 */
export function logFade(log: boolean, heads: number, lines: Lines, layout: HeadLayout): number {
  if (!log || heads < 2 || !lines.n) return 1;
  const lengths = stepLengths(lines, layout), width = lineWidth(lines.n);
  const area = (layout.x1 - layout.x0) * layout.height;
  const cover = (fade: number): number => inkCover(lengths, width, area, fade);
  if (cover(1) <= INK_TARGET) return 1;
  if (cover(MAX_FADE) > INK_TARGET) return MAX_FADE;
  let lo = 1, hi = MAX_FADE; // cover(lo) > target >= cover(hi); it falls as the fade grows
  while (hi - lo > 0.05) {
    const mid = (lo + hi) / 2;
    if (cover(mid) > INK_TARGET) lo = mid;
    else hi = mid;
  }
  return Math.ceil(hi * 10) / 10;
}

/** A line's opacity for its strength (0..1) under the fade exponent `fade`. */
export const lineAlpha = (strength: number, fade: number): number => Math.max(0, Math.min(1, strength)) ** fade;

/** The "too faint to draw" notice with its way out (switch to the row scale). */
export function faintNotice(L: Listeners, useRowScale: () => void): { el: HTMLElement; show: (text: string | null) => void } {
  const el = h("div", "attnscope-status attnscope-faint", { role: "status", "data-testid": "head-faint" });
  const text = h("span");
  const button = h("button", "attnscope-btn", { type: "button", "data-testid": "head-faint-rescale" });
  button.textContent = "Scale lines to the row's largest weight";
  L.on(button, "click", useRowScale);
  el.append(text, " ", button);
  el.hidden = true;
  return {
    el,
    show(message) {
      el.hidden = message == null;
      text.textContent = message ?? "";
    },
  };
}

/**
 * A small vertical offset per shown head, so the lines of many heads between
 * the same two tokens run side by side in their own colours instead of
 * blending into one grey-brown stroke.
 */
export function headOffsets(shown: readonly number[], heads: number): Float32Array {
  const out = new Float32Array(heads);
  const n = shown.length;
  if (n < 2) return out;
  const step = Math.min(1.5, (ROW - 6) / (n - 1));
  shown.forEach((hd, rank) => { if (hd < heads) out[hd] = (rank - (n - 1) / 2) * step; });
  return out;
}

/** An exported image's caption: model, layer, heads and the locked query. */
export function exportCaption(title: string, layer: number, heads: readonly number[], numHeads: number, query: string | null): string {
  const model = title.split(" · ")[0] || "attention";
  const shown = heads.length === numHeads ? `all ${numHeads} heads` : `${heads.length === 1 ? "head" : "heads"} ${heads.join(", ")}`;
  return [isolate(model), `layer ${layer}`, shown, ...(query == null ? [] : [`query “${imageLabel(query.trim())}”`])].join(" · ");
}
