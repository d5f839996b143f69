// The model view's head statistics (the `stats:` chunk): a select of the
// statistic to rank by, each layer's heads ordered by it, a badge on each cell
// and every statistic of the hovered cell. Numbers and pictures only; model.ts
// wires them in.
import { hex, type ThemeColors } from "../../colors";
import { arr } from "../../data";
import { isolate } from "../../label_text";
import type { Painter } from "../../paint/painter";
import type { AppState, Chunk, StatisticMeta, Store } from "../../wire/types";
import { h, type Listeners } from "../common";
import { cellOrigin, LABEL_H, LABEL_W, type GridGeometry } from "./model_grid";

/**
 * For each layer, its heads strongest first by `values` (`(layers, heads)`,
 * layer-major): entry `l * heads + c` is the head shown in column `c`. NaN
 * (a statistic that does not apply) goes last; ties keep head order.
 */
export function headOrder(values: ArrayLike<number>, layers: number, heads: number): Int32Array {
  const order = new Int32Array(layers * heads);
  const key = (v: number): number => (Number.isNaN(v) ? -Infinity : v);
  for (let l = 0; l < layers; l++) {
    const row = Array.from({ length: heads }, (_, hd) => hd);
    row.sort((a, b) => key(values[l * heads + b] as number) - key(values[l * heads + a] as number) || a - b);
    order.set(row, l * heads);
  }
  return order;
}

/** `headOrder` as the grid's cell order: place `l * heads + c` holds cell `l * heads + head`. */
export function layerRanking(values: ArrayLike<number>, layers: number, heads: number): number[] {
  return Array.from(headOrder(values, layers, heads), (hd, place) => place - (place % heads) + hd);
}

/** The smallest and largest finite value (both 0 when there is none). */
export function finiteRange(values: ArrayLike<number>): { min: number; max: number } {
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (Number.isFinite(v)) { if (v < min) min = v; if (v > max) max = v; }
  }
  return min <= max ? { min, max } : { min: 0, max: 0 };
}

/** A value as a badge shows it: 2 significant decimals, "n/a" for NaN. */
export const formatStat = (v: number): string => (Number.isNaN(v) ? "n/a" : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/** The values of statistic `name` in a loaded `stats:` chunk, or null. */
export function statValues(chunk: Chunk | null, name: string | null): Float32Array | null {
  if (!chunk || chunk.error || !name || !chunk.arrays[name]) return null;
  return arr(chunk, name).data as Float32Array;
}

/** Every statistic of cell (layer, head), one line each: what hovering a cell shows (a scan's mean ± its spread). */
export function cellNumbers(chunk: Chunk | null, stats: readonly StatisticMeta[], heads: number, l: number, hd: number): string[] {
  if (!chunk || chunk.error) return [];
  return stats.flatMap((s) => {
    const a = chunk.arrays[s.name];
    const spread = s.spread ? chunk.arrays[s.spread] : undefined;
    const pm = spread ? ` ± ${formatStat(spread.data[l * heads + hd] as number)}` : "";
    const best = s.strongest ? (chunk.arrays[s.strongest]?.data[l * heads + hd] as number | undefined) : undefined;
    const at = best != null && Number.isFinite(best) ? ` (strongest: input ${best})` : "";
    return a ? [`${isolate(statWords(s))} ${formatStat(a.data[l * heads + hd] as number)}${pm}${at}`] : [];
  });
}

/** A statistic's name as the reader sees it: a per-head table's column with a label of its own (segments=: "receiver score (Thought Anchors)") says it. */
export function statWords(s: StatisticMeta): string {
  const named = !s.inputs && s.name.startsWith("scan:") && s.label && s.label !== s.name.slice("scan:".length);
  return named ? s.label : s.name;
}

/** The rank select's words for a statistic: a scan's says what its value is a mean over. */
export function rankWords(s: StatisticMeta): string {
  // A table's column with a name of its own (segments=: "receiver score (Thought Anchors)") says it.
  // A statistic whose label adds to its name ("induction (detect_head 'mul' on this input)") names its protocol.
  const protocol = !s.inputs && !s.name.startsWith("scan:") && s.label.startsWith(`${s.name} `) && s.label.includes("(");
  // Names and labels are the scan's (a table's column names): isolated in attnscope's words.
  if (protocol) return `rank: ${isolate(s.label)}`;
  if (!s.inputs) return `rank: ${isolate(statWords(s))}`;
  return `rank: ${isolate(s.name)} · mean over ${s.inputs} ${s.over ?? "inputs"}${s.spread ? " (± spread)" : ""}`;
}

export interface Badges {
  values: ArrayLike<number>;
  /** The grid's cell order (from `layerRanking`): place `l * heads + c` holds cell `l * heads + head`. */
  order: ArrayLike<number>;
  layers: number;
  heads: number;
  /** The statistic's name, for the scale's legend. */
  name: string;
}

/** The smallest difference `formatStat` shows between values around `v`. */
export const shownStep = (v: number): number => (Math.abs(v) >= 10 ? 0.1 : 0.01);

/**
 * What the badges' bars stand for: null when the values' spread is below what the
 * labels can show (bars would turn a rounding difference into full-width contrast),
 * else the range they run over, and the legend that states it.
 */
export function barScale(values: ArrayLike<number>, name: string): { min: number; max: number; legend: string } {
  const { min, max } = finiteRange(values);
  if (max - min < shownStep(max) / 2) {
    return { min, max: min, legend: `${isolate(name)}: ${formatStat(min)} in every head (to the labels' precision): no bars` };
  }
  return { min, max, legend: `bars: ${isolate(name)}, empty at ${formatStat(min)} (lowest head) → full at ${formatStat(max)} (highest)` };
}

/**
 * A badge in the band under each cell (never over its heatmap): a bar placing the
 * value between the grid's lowest and highest (stated in the legend above the
 * grid; no bars when every value shows alike), and the value where the cell has room.
 */
export function paintBadges(p: Painter, geo: GridGeometry, b: Badges, theme: ThemeColors): void {
  const scale = barScale(b.values, b.name);
  const span = scale.max - scale.min;
  const barH = 3;
  const accent = hex(theme.accent), fg = hex(theme.fg), muted = hex(theme.muted), faint = hex(theme.grid);
  p.text(LABEL_W, LABEL_H / 2, scale.legend, muted, "left");
  for (let l = 0; l < b.layers; l++) {
    for (let c = 0; c < b.heads; c++) {
      const hd = (b.order[l * b.heads + c] as number) % b.heads;
      const v = b.values[l * b.heads + hd] as number;
      const { x, y } = cellOrigin(geo, l, c);
      const top = y + geo.cell + 1;
      if (span > 0) {
        p.rect(x, top, geo.cell, barH, faint);
        if (Number.isFinite(v)) p.rect(x, top, Math.max(1, ((v - scale.min) / span) * geo.cell), barH, accent);
      }
      if (geo.band >= 12 + barH) p.text(x + 1, top + barH + 1, `h${hd} ${formatStat(v)}`, fg, "left", "top");
    }
  }
}

/** The "rank by" select bound to the store's `rank_by`. */
export function rankSelect(L: Listeners, store: Store<AppState>, stats: readonly StatisticMeta[]): HTMLSelectElement {
  const sel = h("select", "attnscope-select", { "aria-label": "Rank heads by statistic", "data-testid": "rank-by" });
  const add = (value: string, label: string, title = ""): void => {
    const o = h("option", "", { value, title });
    o.textContent = label;
    sel.append(o);
  };
  add("", "rank: none");
  for (const s of stats) add(s.name, rankWords(s), `${isolate(s.label)}: ${isolate(s.formula)} (${isolate(s.source)})`);
  sel.value = store.get().rank_by ?? "";
  L.on(sel, "change", () => store.set({ rank_by: sel.value || null }));
  return sel;
}
