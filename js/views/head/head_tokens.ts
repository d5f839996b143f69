// The head view's token columns: a pool of absolutely placed rows, only as many
// as are visible, so thousands of tokens cost a screenful of elements.
import { rgba, type RGB } from "../../colors";
import { isolate, labelElement } from "../../label_text";
import { tokenClasses, type Side } from "../../tokens";
import { h } from "../common";
import { COL_W, ROW } from "./head_lines";

export interface TokenColumn {
  el: HTMLElement;
  pool: HTMLDivElement[];
}

export interface RowMarks {
  selected: number | null;
  hovered: number | null;
  /** Per token, a weight in 0..1 shown as a bar (the focused query's keys); null for none. */
  weights: Float32Array | null;
  barColor: RGB;
  /** The bar of a negative weight (a comparison's A − B where B attends more); absent: `barColor`. */
  negativeColor?: RGB;
  /** Extra classes of token `i` (generated, not generated yet: js/generation.ts). */
  extra?: (i: number) => string;
  /** Rows whose attention is summed (several queries), marked; absent for none. */
  group?: readonly number[];
  /** Rows the find box matched, marked; absent for none. */
  found?: { from: number; to: number } | null;
}

/** Show rows `first..last` of `side` (its first `n` tokens) in `col`, reusing its pooled elements. */
export function placeRows(col: TokenColumn, side: Side, n: number, first: number, last: number, marks: RowMarks): void {
  const { el, pool } = col;
  const count = Math.max(0, Math.min(last, n - 1) - first + 1);
  while (pool.length < count) {
    const d = h("div", "attnscope-tok");
    pool.push(d);
    el.append(d);
  }
  for (let p = 0; p < pool.length; p++) {
    const d = pool[p] as HTMLDivElement;
    if (p >= count) { d.hidden = true; continue; }
    const i = first + p;
    d.hidden = false;
    if (d.dataset.i !== String(i)) {
      d.dataset.i = String(i);
      d.replaceChildren(labelElement(side.labels[i] ?? ""));
      d.title = `${isolate(side.raw[i] ?? "")} (#${i})`;
      d.style.top = `${i * ROW}px`;
    }
    let cls = tokenClasses(side, i) + (marks.extra?.(i) ?? "");
    if (marks.selected === i) cls += " is-selected";
    if (marks.hovered === i) cls += " is-hover";
    if (marks.group?.includes(i)) cls += " is-summed";
    if (marks.found && i >= marks.found.from && i <= marks.found.to) cls += " is-found";
    if (d.className !== cls) d.className = cls;
    const w = marks.weights ? (marks.weights[i] ?? 0) : 0;
    const color = w < 0 && marks.negativeColor ? marks.negativeColor : marks.barColor;
    const shadow = Math.abs(w) > 0.005 ? `inset ${Math.round(Math.abs(w) * (COL_W - 8))}px 0 0 ${rgba(color, 0.3)}` : "";
    if (d.style.boxShadow !== shadow) d.style.boxShadow = shadow;
  }
}

/** Drop every pooled row (the stream, and so the tokens, changed). */
export function clearRows(col: TokenColumn): void {
  for (const d of col.pool.splice(0)) d.remove();
}
