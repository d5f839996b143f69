// The head view's pictures: the lines (or a comparison's signed lines) and the
// rollout's on the canvas, the token rows with their bars, the scale legend and
// status notes; the segments panel in place of the rows; what a PNG or SVG shows.
import { hex } from "../../colors";
import { generationClasses } from "../../generation";
import { isolate } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import type { Painter, Picture } from "../../paint/painter";
import { fmt, markDrawn, setStatus, sizeCanvas, widthOf } from "../common";
import { signedColor } from "../compare/compare_colors";
import { paintSignedLines } from "../compare/compare_head";
import { rowOf, sums, tokenOf } from "./head_analysis";
import {
  collectLines, focusedQuery, keyWeights, MAX_LINES, offscreenKeys, ROW, rowMax, visibleRows, type HeadLayout,
} from "./head_lines";
import { loadRows, rolloutWanted } from "./head_load";
import { paintLines, paintOffscreenCounts, paintTokenLabels } from "./head_paint";
import { queryRolloutRows } from "./head_rollout";
import { exportCaption, headOffsets, logFade, scaleLegend } from "./head_scale";
import { segmentRows } from "./head_segments";
import { placeRows } from "./head_tokens";
import { current, layout, lineHeads, loaded, logOn, shownHeads, st, stream, summed, valueWeightedNow, type HeadView } from "./head_state";

/** The current lines into `v.lines` (capacity kept between draws). */
function collect(v: HeadView, g: HeadLayout): void {
  const top = loaded(v);
  if (!top) { v.lines.n = 0; return; }
  const { display, hover } = v;
  v.lines = collectLines(v.lines, top, g, {
    heads: shownHeads(v),
    query: summed(v).length && !hover ? -1 : focusedQuery(hover, rowOf(display.wordsQ, st(v).query)),
    key: hover?.side === "key" ? hover.i : -1,
    pairFilter: st(v).pair_filter,
    segQ: display.sideQ.segments,
    segK: display.sideK.segments,
    cap: MAX_LINES,
    relative: v.scale === "row",
  });
}

/** The lines and their off-screen counts: what the canvas shows, and what an image shows under the labels. */
function paintCanvasPart(v: HeadView, p: Painter, g: HeadLayout): { above: number; below: number } {
  collect(v, g);
  if (v.signed) paintSignedLines(p, v.lines, g, v.theme);
  else {
    v.fade = logFade(logOn(v), shownHeads(v).length, v.lines, g);
    paintLines(p, v.lines, g, v.colors, lineHeads(v), headOffsets(shownHeads(v), lineHeads(v)), v.fade);
  }
  paintRollout(v, p, g);
  const edges = offscreenKeys(v.lines, g.height);
  paintOffscreenCounts(p, edges, g, v.theme);
  return edges;
}

/** The rollout's lines over the heads', in the text colour (all relative to its largest weight). */
function paintRollout(v: HeadView, p: Painter, g: HeadLayout): void {
  const { view } = v.dom;
  const c = v.rollout?.chunk, q = st(v).query;
  if (!c || c.error || q == null || v.rollout?.key !== rolloutWanted(v)) { view.dataset.rolloutLines = "0"; return; }
  const rows = queryRolloutRows(c, stream(v).q_len, q);
  v.rolloutLines = collectLines(v.rolloutLines, rows, g, { heads: [0], query: q, key: -1, pairFilter: "all", segQ: null, segK: null, cap: MAX_LINES, relative: true });
  paintLines(p, v.rolloutLines, g, [hex(v.theme.fg)], 1);
  view.dataset.rolloutLines = String(v.rolloutLines.n);
}

/**
 * Max weight over the selected heads from the focused query to each key; for
 * several queries, their summed weight divided by their number (so a bar fits);
 * null when no query is focused.
 */
function focusWeights(v: HeadView): Float32Array | null {
  const { display, hover } = v;
  const kLen = display.sideK.labels.length, qLen = display.sideQ.labels.length;
  if (v.keyW.length !== kLen) v.keyW = new Float32Array(kLen);
  const keyW = v.keyW;
  const group = hover ? [] : summed(v);
  const a = current(v);
  if (group.length && a) {
    const total = sums(a, shownHeads(v), group);
    for (let k = 0; k < kLen; k++) keyW[k] = (total[k] as number) / group.length;
    return keyW;
  }
  const f = focusedQuery(hover, rowOf(display.wordsQ, st(v).query));
  const top = loaded(v);
  if (f < 0 || f >= qLen || !top) return null;
  keyWeights(keyW, top, shownHeads(v), f, v.signed);
  const rm = rowMax(top, shownHeads(v), f);
  if (v.scale === "row" && rm > 0) for (let k = 0; k < keyW.length; k++) keyW[k] = (keyW[k] as number) / rm;
  return keyW;
}

/** The status line for several queries: how many, and the keys their summed attention goes to most. */
function summedStatus(v: HeadView): string | null {
  const group = v.hover ? [] : summed(v);
  const a = current(v);
  if (!group.length || !a) return null;
  const total = sums(a, shownHeads(v), group);
  const best = Array.from(total, (w, k) => [w, k] as const).sort((x, y) => y[0] - x[0]).slice(0, 3);
  const names = best.map(([w, k]) => `${isolate(v.display.sideK.labels[k] ?? String(k))} ${w.toFixed(2)}`).join(", ");
  return `Summed attention of ${group.length} queries (shift-click toggles one): ${names}`;
}

/** Draw now; `false` when the viewport has no width (hidden, or out of the page) and nothing was drawn. */
export function drawHead(v: HeadView): boolean {
  const { meta } = v.ctx;
  const { view, viewport, body, canvas, colQ, colK, status, scaleBox, faint } = v.dom;
  const t0 = performance.now();
  v.dom.segToggle.sync();
  view.classList.toggle("is-segments", segmentRows(meta, st(v)));
  if (segmentRows(meta, st(v))) return drawSegments(v, t0);
  const width = widthOf(viewport);
  if (!width) return false; // the scheduler tries again next frame, watchResize once it has a width
  if (v.revealPending) {
    // Opened on a locked query (a click in a long input's model-view cell): scroll to it first.
    v.revealPending = false;
    const pre = layout(v, width);
    viewport.style.height = `${pre.height}px`;
    body.style.height = `${pre.rows * ROW}px`;
    reveal(v, rowOf(v.display.wordsQ, st(v).query));
  }
  const g = layout(v, width);
  const s = st(v);
  loadRows(v, g);
  viewport.style.height = `${g.height}px`;
  body.style.height = `${g.rows * ROW}px`;
  const { display, theme, signed, hover } = v;
  const extra = (i: number): string => generationClasses(v.generation, s.step, i);
  const marks = (side: "query" | "key", selected: number | null, weights: Float32Array | null) =>
    ({ selected, hovered: hover?.side === side ? hover.i : null, weights,
       // A − B: a key's bar in A's colour where A attends more, in B's where B does (the legend).
       barColor: signed ? signedColor(1, theme) : theme.accent,
       ...(signed ? { negativeColor: signedColor(-1, theme) } : {}),
       extra: (i: number) => extra(tokenOf(side === "query" ? display.startsQ : display.startsK, i)) });
  const group = summed(v);
  const queryRow = rowOf(display.wordsQ, s.query);
  // A found span stays marked while the query is in it (a click elsewhere lets it go).
  if (v.found && (queryRow == null || queryRow < v.found.from || queryRow > v.found.to)) v.found = null;
  placeRows(colQ, display.sideQ, display.sideQ.labels.length, g.first, g.last, { ...marks("query", queryRow, null), group, found: v.found });
  placeRows(colK, display.sideK, display.sideK.labels.length, g.first, g.last, marks("key", rowOf(display.wordsK, s.key), focusWeights(v)));
  v.dom.swatches.sync();
  v.dom.rolloutBox.el.hidden = !(v.analysing && stream(v).rollout_query);
  v.steps?.sync();
  v.dom.analysis.sync();
  const note = summedStatus(v);
  if (note || (view.dataset.summed && !v.loadStatus)) setStatus(status, note); // a loading or error line stays
  if (note) view.dataset.summed = String(group.length);
  else delete view.dataset.summed;
  if (v.pairSelect) v.pairSelect.value = s.pair_filter;
  const dpr = window.devicePixelRatio || 1;
  const c = sizeCanvas(canvas, g.width, g.height, dpr);
  let edges = { above: 0, below: 0 };
  if (c) {
    c.clearRect(0, 0, g.width, g.height);
    edges = paintCanvasPart(v, canvasPainter(c, theme.font, dpr), g);
  }
  const rows = loaded(v), f = focusedQuery(hover, rowOf(display.wordsQ, s.query));
  const rm = rows && f >= 0 && f < display.sideQ.labels.length ? rowMax(rows, shownHeads(v), f) : 0;
  scaleBox.legend.textContent = scaleLegend(v.scale, f >= 0 ? rm : null, v.chosen ? stream(v).k_len : null, logOn(v) ? v.fade : null);
  // A focused row whose every weight is under 1/255 draws nothing: say so, and offer the row scale.
  faint.show(v.scale === "weight" && rm > 0 && rm * 255 < 1 ? `All weights of “${isolate(display.sideQ.labels[f] ?? String(f))}” are below 1/255 (the largest is ${fmt(rm)}): too faint to draw at this scale.` : null);
  view.dataset.lines = String(v.lines.n);
  view.dataset.width = String(g.width);
  view.dataset.scale = v.scale;
  view.dataset.fade = String(v.fade);
  view.dataset.offscreen = `${edges.above},${edges.below}`;
  view.dataset.drawMs = (performance.now() - t0).toFixed(1);
  markDrawn(view, v.ready && !v.top.error());
  return true;
}

/** Segment rows in place of token rows: the panel draws, the token rows wait hidden. */
function drawSegments(v: HeadView, t0: number): boolean {
  const { view, status, segPanel } = v.dom;
  const width = widthOf(view);
  if (!width) return false;
  if (v.loadStatus) { setStatus(status, null); v.loadStatus = null; }
  v.dom.swatches.sync();
  const drawn = segPanel.draw(width, v.colors, v.theme);
  view.dataset.lines = segPanel.el.dataset.lines ?? "0";
  view.dataset.drawMs = (performance.now() - t0).toFixed(1);
  markDrawn(view, drawn);
  return true;
}

/** Scroll a selected row into view (keyboard moves the query past the edge). */
export function reveal(v: HeadView, i: number | null): void {
  if (i == null) return;
  const { viewport } = v.dom;
  const vh = layout(v).height, top = viewport.scrollTop, y = i * ROW;
  if (y < top) viewport.scrollTop = y;
  else if (y + ROW > top + vh) viewport.scrollTop = y + ROW - vh;
}

/** An exported picture's file name: the layer, and what the rows are in segments mode. */
export const exportName = (v: HeadView): string =>
  `attnscope-head-${segmentRows(v.ctx.meta, st(v)) ? `${v.ctx.meta.segments?.by ?? "segments"}-` : ""}L${st(v).layer}`;

/** An exported picture's caption, above it (js/export_image.ts): under it, the caption met the last label. */
export function exportLines(v: HeadView): string[] {
  const { meta } = v.ctx;
  if (segmentRows(meta, st(v))) return v.dom.segPanel.caption();
  const g = layout(v), s = st(v), { first, last } = visibleRows(g), { display } = v;
  const shown = last - first + 1 < g.rows ? [`rows ${first + 1}–${last + 1} of ${g.rows} drawn (those on screen; scroll the view to export others)`] : [];
  const options = [valueWeightedNow(v) ? "weighted by value norm (α·‖f(x_j)‖, renormalised per row)" : "", s.hide_special ? "special tokens hidden" : "", s.words ? "words" : ""].filter(Boolean);
  return [
    exportCaption(meta.title ?? "", stream(v).layers[s.layer] ?? s.layer, shownHeads(v), stream(v).num_heads, s.query == null ? null : display.sideQ.labels[rowOf(display.wordsQ, s.query) ?? 0] ?? null),
    // The picture has the lines, not the screen's key bars: its caption speaks of lines only.
    [(v.dom.scaleBox.legend.textContent ?? "").replace("lines and key bars", "lines"), ...options].filter(Boolean).join(" · "),
    ...shown,
  ].filter(Boolean);
}

/** What a PNG or SVG shows: the lines with the token labels drawn beside them (or the segments panel). */
export function exportPicture(v: HeadView): Picture | null {
  if (segmentRows(v.ctx.meta, st(v))) return v.dom.segPanel.picture(widthOf(v.dom.view), v.colors, v.theme);
  const g = layout(v);
  const s = st(v);
  return {
    width: g.width, height: g.height, background: hex(v.theme.bg), font: v.theme.font,
    paint: (p) => {
      const { display, theme, generation } = v;
      paintCanvasPart(v, p, g);
      paintTokenLabels(p, g, display.sideQ, display.sideK, theme, generation ? rowOf(display.wordsQ, generation.prompt) : null, {
        query: s.query == null ? null : rowOf(display.wordsQ, s.query),
        key: s.key == null ? null : rowOf(display.wordsK, s.key),
      });
    },
  };
}
