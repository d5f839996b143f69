// Head view: query tokens left, key tokens right, one line per (query, key, head)
// from the top-k chunk. Virtualised rows, one canvas pass, capped line count.
// The numbers live in head_lines.ts, the drawing in head_paint.ts, the token
// rows in head_tokens.ts and the toolbar in head_controls.ts; this file wires
// them to the store and the chunks.
import { hex, readTheme, type ThemeColors } from "../colors";
import { topKey } from "../chunk_keys";
import { saveButtons } from "../export_image";
import { canvasPainter } from "../paint/canvas_painter";
import type { Painter } from "../paint/painter";
import { keySide, querySide, streamOf, type Side } from "../tokens";
import type { AppState, Chunk, Cleanup, ViewContext } from "../types";
import { fmt, h, listeners, markDrawn, scheduler, setStatus, sizeCanvas, watchResize, widthOf } from "./common";
import { generationClasses, generationOf, type Generation } from "../generation";
import { headSwatches, pairFilterSelect } from "./head_controls";
import {
  collectLines, emptyLines, focusedQuery, headLayout, keyWeights, MAX_LINES, offscreenKeys, ROW, rowMax, topRowsOf,
  type HeadLayout, type Hover, type TopRows,
} from "./head_lines";
import { paintCaption, paintLines, paintOffscreenCounts, paintTokenLabels, CAPTION_H } from "./head_paint";
import { stepControl, type StepControl } from "./head_step";
import { exportCaption, faintNotice, headOffsets, scaleControl, scaleLegend, type LineScale } from "./head_scale";
import { clearRows, placeRows, type TokenColumn } from "./head_tokens";
import { diffLegend, paintSignedLines } from "./compare_head";

export function renderHeadView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  /** A comparison's A − B: signed lines in diverging colours. */
  const signed = ctx.side === "diff";
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-headview", { "data-testid": "head-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const swatchBox = h("div", "attnscope-swatches", { role: "group", "aria-label": "Heads (click toggles, double-click shows only that head)" });
  const status = h("div", "attnscope-status");
  const viewport = h("div", "attnscope-hv-viewport", { "data-testid": "head-viewport" });
  const body = h("div", "attnscope-hv-body");
  const canvas = h("canvas", "attnscope-hv-canvas", { "data-testid": "head-canvas", "aria-hidden": "true" });
  const colQ: TokenColumn = { el: h("div", "attnscope-hv-col attnscope-hv-q", { "data-side": "query", "aria-label": "Query tokens" }), pool: [] };
  const colK: TokenColumn = { el: h("div", "attnscope-hv-col attnscope-hv-k", { "data-side": "key", "aria-label": "Key tokens" }), pool: [] };
  body.append(canvas, colQ.el, colK.el);
  viewport.append(body);
  const scaleBox = scaleControl(L, (next) => { scale = next; sched.request(); });
  const faint = faintNotice(L, () => { scale = "row"; scaleBox.select.value = "row"; sched.request(); });
  view.append(bar, status, faint.el, viewport);
  root.append(view);

  const st = (): AppState => store.get();
  const stream = () => streamOf(meta, st().stream);
  let pairSelect: HTMLSelectElement | null = null;
  let chunk: Chunk | null = null;
  let chunkKey = "";
  let hover: Hover = null;
  let lines = emptyLines();
  let theme: ThemeColors = readTheme(root, st().resolved_theme === "dark");
  let colors: string[] = [];
  let sideQ: Side = querySide(meta, stream());
  let sideK: Side = keySide(meta, stream());
  let generation: Generation | null = null;
  let steps: StepControl | null = null;
  let scale: LineScale = "weight";
  const swatches = headSwatches(swatchBox, L, store, () => stream().num_heads);

  const layout = (width = widthOf(viewport)): HeadLayout => {
    const s = stream();
    return headLayout(s.q_len, s.k_len, width, viewport.scrollTop);
  };
  const loaded = (): TopRows | null => (chunk && !chunk.error ? topRowsOf(chunk, stream().q_len, stream().top_k) : null);
  const shownHeads = (): number[] => st().heads.filter((x) => x >= 0 && x < stream().num_heads);

  /** The current lines into `lines` (capacity kept between draws). */
  function collect(g: HeadLayout): void {
    const top = loaded();
    if (!top) { lines.n = 0; return; }
    lines = collectLines(lines, top, g, {
      heads: shownHeads(),
      query: focusedQuery(hover, st().query),
      key: hover?.side === "key" ? hover.i : -1,
      pairFilter: st().pair_filter,
      segQ: sideQ.segments,
      segK: sideK.segments,
      cap: MAX_LINES,
      relative: scale === "row",
    });
  }

  /** The lines and their off-screen counts: what the canvas shows, and what an image shows under the labels. */
  function paintCanvasPart(p: Painter, g: HeadLayout): { above: number; below: number } {
    collect(g);
    if (signed) paintSignedLines(p, lines, g, theme);
    else paintLines(p, lines, g, colors, stream().num_heads, headOffsets(shownHeads(), stream().num_heads));
    const edges = offscreenKeys(lines, g.height);
    paintOffscreenCounts(p, edges, g, theme);
    return edges;
  }

  /** Max weight over the selected heads from the focused query to each key; null when no query is focused. */
  let keyW = new Float32Array(0);
  function focusWeights(): Float32Array | null {
    const sm = stream();
    if (keyW.length !== sm.k_len) keyW = new Float32Array(sm.k_len);
    const f = focusedQuery(hover, st().query);
    const top = loaded();
    if (f < 0 || f >= sm.q_len || !top) return null;
    keyWeights(keyW, top, shownHeads(), f);
    const rm = rowMax(top, shownHeads(), f);
    if (scale === "row" && rm > 0) for (let k = 0; k < keyW.length; k++) keyW[k] = (keyW[k] as number) / rm;
    return keyW;
  }

  function draw(): void {
    const t0 = performance.now();
    const width = widthOf(viewport);
    // No width (hidden, or out of the page): draw nothing now; watchResize draws once it has one.
    if (!width) return;
    const g = layout(width);
    const s = st();
    const sm = stream();
    viewport.style.height = `${g.height}px`;
    body.style.height = `${g.rows * ROW}px`;
    const extra = (i: number): string => generationClasses(generation, s.step, i);
    const marks = (side: "query" | "key", selected: number | null, weights: Float32Array | null) =>
      ({ selected, hovered: hover?.side === side ? hover.i : null, weights, barColor: theme.accent, extra });
    placeRows(colQ, sideQ, sm.q_len, g.first, g.last, marks("query", s.query, null));
    placeRows(colK, sideK, sm.k_len, g.first, g.last, marks("key", s.key, focusWeights()));
    swatches.sync();
    steps?.sync();
    if (pairSelect) pairSelect.value = s.pair_filter;
    const dpr = window.devicePixelRatio || 1;
    const c = sizeCanvas(canvas, g.width, g.height, dpr);
    let edges = { above: 0, below: 0 };
    if (c) {
      c.clearRect(0, 0, g.width, g.height);
      edges = paintCanvasPart(canvasPainter(c, theme.font, dpr), g);
    }
    const top = loaded(), f = focusedQuery(hover, s.query);
    const rm = top && f >= 0 && f < sm.q_len ? rowMax(top, shownHeads(), f) : 0;
    scaleBox.legend.textContent = scaleLegend(scale, f >= 0 ? rm : null);
    // A focused row whose every weight is under 1/255 draws nothing: say so, and offer the row scale.
    faint.show(scale === "weight" && rm > 0 && rm * 255 < 1 ? `All weights of “${sideQ.labels[f] ?? f}” are below 1/255 (the largest is ${fmt(rm)}): too faint to draw at this scale.` : null);
    view.dataset.lines = String(lines.n);
    view.dataset.width = String(g.width);
    view.dataset.scale = scale;
    view.dataset.offscreen = `${edges.above},${edges.below}`;
    view.dataset.drawMs = (performance.now() - t0).toFixed(1);
    markDrawn(view, !!chunk && !chunk.error);
  }
  const sched = scheduler(draw);

  function load(): void {
    const s = st();
    const key = topKey(s.stream, s.layer);
    if (key === chunkKey && chunk) return;
    chunkKey = key;
    const cached = data.peek(key);
    chunk = cached ?? null;
    if (!cached) {
      setStatus(status, `Loading layer ${streamOf(meta, s.stream).layers[s.layer] ?? s.layer}…`);
      view.dataset.ready = "false";
    }
    data.request([key]).then((m) => {
      if (chunkKey !== key) return;
      chunk = m.get(key) ?? { key, arrays: {}, error: "missing" };
      if (chunk.error) setStatus(status, `Could not load ${key}: ${chunk.error}`, "error");
      else setStatus(status, null);
      sched.request();
      const L2 = streamOf(meta, s.stream).layers.length;
      const next = [s.layer + 1, s.layer - 1].filter((l) => l >= 0 && l < L2).map((l) => topKey(s.stream, l));
      if (next.length) void data.request(next);
    }).catch(() => undefined);
    sched.request();
  }

  // Interaction.
  const rowOf = (e: Event): Hover => {
    const t = (e.target as HTMLElement | null)?.closest?.("[data-i]") as HTMLElement | null;
    const col = t?.parentElement as HTMLElement | null;
    if (!t || !col?.dataset.side) return null;
    return { side: col.dataset.side as "query" | "key", i: Number(t.dataset.i) };
  };
  for (const col of [colQ.el, colK.el]) {
    L.on(col, "mouseover", (e) => {
      const r = rowOf(e);
      if (r && (r.side !== hover?.side || r.i !== hover.i)) { hover = r; sched.request(); }
    });
    L.on(col, "mouseleave", () => { if (hover) { hover = null; sched.request(); } });
    L.on(col, "click", (e) => {
      const r = rowOf(e);
      if (!r) return;
      if (r.side === "query") store.set({ query: st().query === r.i ? null : r.i });
      else store.set({ key: st().key === r.i ? null : r.i });
    });
  }
  L.on(viewport, "scroll", () => sched.request(), { passive: true });

  bar.append(swatchBox, scaleBox.el);
  if (signed) bar.append(diffLegend());
  const unSave = saveButtons(bar, {
    name: () => `attnscope-head-L${st().layer}`,
    picture: () => {
      const g = layout();
      const s = st();
      const caption = exportCaption(meta.title ?? "", stream().layers[s.layer] ?? s.layer, shownHeads(), stream().num_heads, s.query == null ? null : sideQ.labels[s.query] ?? null);
      return {
        width: g.width, height: g.height + CAPTION_H, background: hex(theme.bg), font: theme.font,
        paint: (p) => {
          paintCanvasPart(p, g);
          paintTokenLabels(p, g, sideQ, sideK, theme, generation?.prompt ?? null, { query: s.query, key: s.key });
          paintCaption(p, g, caption, theme);
        },
      };
    },
  });

  function rebuildStream(): void {
    sideQ = querySide(meta, stream());
    sideK = keySide(meta, stream());
    clearRows(colQ);
    clearRows(colK);
    colors = swatches.build(theme.dark);
    pairSelect?.remove();
    pairSelect = sideQ.segments && sideK.segments ? pairFilterSelect(L, store) : null;
    if (pairSelect) bar.prepend(pairSelect);
    generation = generationOf(meta, st().stream);
    steps?.stop();
    steps?.el.remove();
    steps = generation ? stepControl(L, store, generation, () => sideQ) : null;
    if (steps) bar.prepend(steps.el);
  }

  /** Scroll a selected row into view (keyboard moves the query past the edge). */
  function reveal(i: number | null): void {
    if (i == null) return;
    const vh = layout().height, top = viewport.scrollTop, y = i * ROW;
    if (y < top) viewport.scrollTop = y;
    else if (y + ROW > top + vh) viewport.scrollTop = y + ROW - vh;
  }

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      theme = readTheme(root, st().resolved_theme === "dark");
      colors = swatches.build(theme.dark);
    }
    if (changed.has("stream")) rebuildStream();
    if (changed.has("stream") || changed.has("layer")) load();
    if (changed.has("query") || changed.has("key")) reveal(changed.has("query") ? st().query : st().key);
    sched.request();
  });
  const unResize = watchResize(viewport, () => sched.request());

  rebuildStream();
  load();

  return () => {
    sched.cancel();
    steps?.stop();
    unsub();
    unResize();
    unSave();
    L.clear();
    view.remove();
  };
}
