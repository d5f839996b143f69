// The head view's scale, said in words: what a line's strength and a key bar's
// full length mean, a way to see rows whose weights are all tiny (long inputs),
// and the caption an exported image carries.
import { LONG_INPUT } from "../colors";
import { imageLabel } from "../label_text";
import { fmt, h, type Listeners } from "./common";
import { ROW } from "./head_lines";

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
 * (null: no query focused); `chosenFor`, the key count when the view chose the scale itself.
 */
export function scaleLegend(scale: LineScale, rowMax: number | null, chosenFor: number | null = null): string {
  const why = chosenFor != null && scale === "row" ? ` (chosen for ${chosenFor} tokens: past ${LONG_INPUT}, a row's weights are each too faint to draw as weights)` : "";
  if (scale === "weight") return "lines and key bars: the weight (full = 1)";
  return (rowMax == null ? "lines: weight ÷ each query's largest" : `lines and key bars: weight ÷ row max (row max = ${fmt(rowMax)})`) + why;
}

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
  return [model, `layer ${layer}`, shown, ...(query == null ? [] : [`query “${imageLabel(query.trim())}”`])].join(" · ");
}
