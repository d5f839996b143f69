// The head view's answers: hover and click on the token rows (shift-click sums
// queries), scrolling, the scale and rollout switches, and the store's changes
// (theme, stream, words, pseudo-heads, layer, query and key).
import { readTheme } from "../../colors";
import { generationOf, queryOfStep } from "../../generation";
import type { AppState } from "../../wire/types";
import type { Listeners } from "../common";
import { displayOf, rowOf, tokenOf } from "./head_analysis";
import { pairFilterSelect } from "./head_controls";
import { reveal } from "./head_draw";
import type { Hover } from "./head_lines";
import { loadLayer, loadPseudo, loadRollout } from "./head_load";
import type { LineScale } from "./head_scale";
import { stepControl, strongestKeyTies, type LookedAt } from "./head_step";
import { clearRows } from "./head_tokens";
import { lineColors, openingScale, st, stream, type HeadView } from "./head_state";

/** Shift-click: the group starts from the selected query, then each click adds or removes a token. */
function toggledQueries(v: HeadView, token: number): number[] {
  const s = st(v), words = v.display.wordsQ;
  const cur = s.queries.length ? s.queries : s.query != null ? [s.query] : [];
  const same = (q: number): boolean => rowOf(words, q) === rowOf(words, token);
  const next = cur.some(same) ? cur.filter((q) => !same(q)) : [...cur, token];
  return next.sort((a, b) => a - b);
}

/** The token row under the pointer: its column's side and its display row. */
function rowUnder(e: Event): Hover {
  const t = (e.target as HTMLElement | null)?.closest?.("[data-i]") as HTMLElement | null;
  const col = t?.parentElement as HTMLElement | null;
  if (!t || !col?.dataset.side) return null;
  return { side: col.dataset.side as "query" | "key", i: Number(t.dataset.i) };
}

/** Hover and click on the token rows, and the viewport's scroll. */
export function bindHeadEvents(v: HeadView, L: Listeners): void {
  const { store } = v.ctx;
  for (const col of [v.dom.colQ.el, v.dom.colK.el]) {
    L.on(col, "mouseover", (e) => {
      const r = rowUnder(e);
      if (r && (r.side !== v.hover?.side || r.i !== v.hover.i)) { v.hover = r; v.redraw(); }
    });
    L.on(col, "mouseleave", () => { if (v.hover) { v.hover = null; v.redraw(); } });
    L.on<MouseEvent>(col, "click", (e) => {
      const r = rowUnder(e);
      if (!r) return;
      if (r.side === "query") {
        const token = tokenOf(v.display.startsQ, r.i);
        if (e.shiftKey) store.set({ queries: toggledQueries(v, token) });
        else store.set({ query: st(v).query === token ? null : token, queries: [] });
      } else {
        const token = tokenOf(v.display.startsK, r.i);
        store.set({ key: st(v).key === token ? null : token });
      }
    });
  }
  L.on(v.dom.viewport, "scroll", () => v.redraw(), { passive: true });
}

/** The reader chose a scale (the select, or the faint notice's offer of the row scale). */
export function chooseScale(v: HeadView, scale: LineScale): void {
  v.scale = scale;
  v.chosen = false;
  v.dom.scaleBox.select.value = scale;
  v.redraw();
}

/** The rollout switch: fetch the locked query's rollout when on. */
export function toggleRollout(v: HeadView, on: boolean): void {
  v.rolloutOn = on;
  loadRollout(v);
  v.redraw();
}

/** Rows for the stream and the words switch (the token rows rebuilt from scratch). */
function rebuildRows(v: HeadView): void {
  v.display = displayOf(v.ctx.meta, stream(v), v.analysing && st(v).words);
  clearRows(v.dom.colQ);
  clearRows(v.dom.colK);
}

/** A new stream: rows, colours, the pair filter of an encoder-decoder's sides and a generation's step control. */
export function rebuildStream(v: HeadView, L: Listeners): void {
  const { store, meta } = v.ctx;
  const { bar } = v.dom;
  rebuildRows(v);
  v.colors = lineColors(v);
  v.dom.analysis.build(v.theme.dark);
  v.pairSelect?.remove();
  v.pairSelect = v.display.tokensQ.segments && v.display.tokensK.segments ? pairFilterSelect(L, store) : null;
  if (v.pairSelect) bar.prepend(v.pairSelect);
  v.generation = generationOf(meta, st(v).stream);
  v.steps?.stop();
  v.steps?.el.remove();
  v.steps = v.generation ? stepControl(L, store, v.generation, () => v.display.tokensQ, (step) => lookedAt(v, step)) : null;
  if (v.steps) bar.prepend(v.steps.el);
}

/** With one head selected (a model-view click), its strongest key at a step, once that row is loaded. */
function lookedAt(v: HeadView, step: number): LookedAt | null {
  const heads = st(v).heads, rows = v.ready ? v.top.rows() : null;
  if (!rows || heads.length !== 1 || !v.generation) return null;
  const found = strongestKeyTies(rows, heads[0] as number, queryOfStep(v.generation, step));
  return found && { head: heads[0] as number, ...found };
}

/** Follow the store; returns the unsubscribe. */
export function followStore(v: HeadView, L: Listeners): () => void {
  const { store, root } = v.ctx;
  return store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      v.theme = readTheme(root, st(v).resolved_theme === "dark");
      v.colors = lineColors(v);
      v.dom.analysis.build(v.theme.dark);
    }
    if (changed.has("stream") && v.chosen) { v.scale = openingScale(v); v.dom.scaleBox.select.value = v.scale; }
    if (changed.has("stream")) rebuildStream(v, L);
    else if (changed.has("words")) rebuildRows(v);
    if (changed.has("pseudo_heads")) loadPseudo(v);
    if (changed.has("stream") || changed.has("layer") || changed.has("segment_rows")) loadLayer(v);
    if (["stream", "layer", "query", "words"].some((k) => changed.has(k as keyof AppState))) loadRollout(v);
    if (changed.has("query") || changed.has("key")) reveal(v, changed.has("query") ? rowOf(v.display.wordsQ, st(v).query) : rowOf(v.display.wordsK, st(v).key));
    v.redraw();
  });
}
