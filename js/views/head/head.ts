// Head view: query tokens left, key tokens right, one line per (query, key, head)
// from the top-k chunk. Virtualised rows, one canvas pass, capped line count.
// The numbers live in head_lines.ts, the drawing in head_paint.ts, the token
// rows in head_tokens.ts and the toolbar in head_controls.ts; this file wires
// them to the store and the chunks.
import { hex, readTheme, type ThemeColors } from "../../colors";
import { pseudoKey, queryRolloutKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import { saveButtons } from "../../export_image";
import { canvasPainter } from "../../paint/canvas_painter";
import type { Painter } from "../../paint/painter";
import { streamOf } from "../../tokens";
import type { AppState, Chunk, Cleanup, ViewContext } from "../../wire/types";
import { fmt, h, listeners, markDrawn, scheduler, setStatus, sizeCanvas, watchResize, widthOf } from "../common";
import { generationClasses, generationOf, queryOfStep, type Generation } from "../../generation";
import {
  analyse, analysisControls, displayOf, offeredPseudo, pseudoColor, rowOf, summedRows, sums, tokenOf,
  type Analysed, type Display,
} from "./head_analysis";
import { layerRows, tokenRange, type RowRange } from "./head_blocks";
import { headSwatches, pairFilterSelect } from "./head_controls";
import {
  collectLines, emptyLines, focusedQuery, headLayout, keyWeights, MAX_LINES, offscreenKeys, ROW, rowMax, topRowsOf,
  visibleRows, type HeadLayout, type Hover, type TopRows,
} from "./head_lines";
import { paintLines, paintOffscreenCounts, paintTokenLabels } from "./head_paint";
import { stepControl, strongestKey, type LookedAt, type StepControl } from "./head_step";
import { tokenSearch } from "./head_search";
import { queryRolloutRows, rolloutToggle } from "./head_rollout";
import {
  defaultLineScale, exportCaption, faintNotice, headOffsets, logFade, scaleControl, scaleLegend, type LineScale,
} from "./head_scale";
import { clearRows, placeRows, type TokenColumn } from "./head_tokens";
import { segmentPanel, segmentRows, segmentToggle } from "./head_segments";
import { diffLegend, paintSignedLines } from "../compare/compare_head";
import { signedColor } from "../compare/compare_colors";

export function renderHeadView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  /** A comparison's A − B: signed lines in diverging colours. */
  const signed = ctx.side === "diff";
  /** The analysis switches apply to one trace's weights; a comparison's rows are aligned pairs. */
  const analysing = !meta.comparison;
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
  const scaleBox = scaleControl(L, (next) => { scale = next; chosen = false; sched.request(); });
  const faint = faintNotice(L, () => { scale = "row"; chosen = false; scaleBox.select.value = "row"; sched.request(); });
  view.append(bar, status, faint.el, viewport);
  root.append(view);
  // segments= (_meta.segments): rows are sentences or turns, in a panel of their own.
  const segPanel = segmentPanel(meta, store, data, L, () => sched.request(), status);
  const segToggle = segmentToggle(meta, store, L);
  view.append(segPanel.el);

  const st = (): AppState => store.get();
  const stream = () => streamOf(meta, st().stream);
  let pairSelect: HTMLSelectElement | null = null;
  /** The layer's rows, loaded a block at a time where the stream offers blocks. */
  const top = layerRows(data, () => sched.request());
  /** Every row the last draw needed was loaded (else its lines, bars and numbers wait). */
  let ready = false;
  /** The neighbouring layers were asked for, once this layer's rows were in. */
  let prefetched = false;
  /** What the status line says about loading (so other messages are not cleared). */
  let loadStatus: "loading" | "error" | null = null;
  let hover: Hover = null;
  let lines = emptyLines();
  let theme: ThemeColors = readTheme(root, st().resolved_theme === "dark");
  let colors: string[] = [];
  let generation: Generation | null = null;
  let steps: StepControl | null = null;
  /** A comparison's signed lines keep the weight scale; a long input opens on the row scale (said in the legend). */
  const openingScale = (): LineScale => (signed ? "weight" : defaultLineScale(stream().k_len));
  /** The view opens scrolled to a locked query (set before it was mounted). */
  let revealPending = st().query != null;
  let scale: LineScale = openingScale();
  /** The scale is the view's own choice (not the reader's): it follows the stream, and the legend says why. */
  let chosen = true;
  scaleBox.select.value = scale;
  let display: Display = displayOf(meta, stream(), analysing && st().words);
  let pseudo: Chunk | null = null;
  let pseudoChunkKey = "";
  const swatches = headSwatches(swatchBox, L, store, () => stream().num_heads);
  const analysis = analysisControls(analysing ? bar : h("div"), L, store, () => (analysing ? offeredPseudo(stream()) : []));

  const layout = (width = widthOf(viewport)): HeadLayout =>
    headLayout(display.sideQ.labels.length, display.sideK.labels.length, width, viewport.scrollTop);
  /** The query rows summed (shift-click), as display rows; [] for one query. */
  const summed = (): number[] => summedRows(display, st().queries);
  /** The pseudo-heads shown, as line indices after the real heads. */
  const shownPseudo = (): number[] => {
    const offered = analysing ? offeredPseudo(stream()) : [];
    return st().pseudo_heads.map((p) => offered.indexOf(p)).filter((i) => i >= 0).map((i) => stream().num_heads + i);
  };
  let analysed: { sig: string; value: Analysed } | null = null;
  /** The loaded layer through the analysis switches (recomputed only when one of them, or a chunk, changes). */
  const current = (): Analysed | null => {
    const rows = ready && analysing ? top.rows() : null;
    if (!rows) return null;
    const sm = stream(), s = st();
    const withPseudo = s.pseudo_heads.length > 0 && !!pseudo && !pseudo.error;
    const keep = hover ? [] : summed();
    const sig = [top.signature(), withPseudo ? pseudo?.key : "", s.words, s.hide_special, s.log_scale, keep.join(",")].join("|");
    if (analysed?.sig !== sig) {
      analysed = { sig, value: analyse({
        top: rows, heads: sm.num_heads,
        pseudo: withPseudo && pseudo ? topRowsOf(pseudo, sm.q_len, sm.top_k) : null, pseudoHeads: offeredPseudo(sm).length,
        display, hide: s.hide_special, log: s.log_scale, keep,
      }) };
    }
    return analysed.value;
  };
  const loaded = (): TopRows | null => {
    if (!ready) return null;
    if (analysing) return current()?.lines ?? null;
    return top.rows();
  };
  /**
   * The query rows a draw reads: the rows on screen (with overscan), the
   * focused query's and the summed queries' (each a word's every piece in
   * words mode); the view's numbers wait until all of them are loaded.
   */
  const neededRows = (g: HeadLayout): RowRange[] => {
    const Q = stream().q_len, shown = display.sideQ.labels.length, starts = display.startsQ;
    const ranges: RowRange[] = [];
    if (g.first < shown) ranges.push(tokenRange(g.first, Math.min(g.last, shown - 1), starts, Q));
    const focus = [rowOf(display.wordsQ, st().query), hover?.side === "query" ? hover.i : null, ...summed()];
    for (const r of focus) if (r != null && r >= 0 && r < shown) ranges.push(tokenRange(r, r, starts, Q));
    return ranges;
  };
  /** Ask for the rows `g` needs; say on the status line while they load, or why they cannot. */
  function loadRows(g: HeadLayout): void {
    const ranges = neededRows(g);
    ready = top.need(ranges);
    const failed = top.error(), s = st();
    if (failed) {
      setStatus(status, `Could not load ${chunkWords(failed.key, meta)}: ${failed.error}`, "error");
      loadStatus = "error";
    } else if (!ready) {
      setStatus(status, `Loading layer ${stream().layers[s.layer] ?? s.layer}…`);
      loadStatus = "loading";
    } else if (loadStatus) {
      setStatus(status, null);
      loadStatus = null;
    }
    if (ready && !prefetched) {
      prefetched = true;
      const next = [s.layer + 1, s.layer - 1].filter((l) => l >= 0 && l < stream().layers.length);
      top.prefetchLayers(next, ranges);
    }
  }
  const shownHeads = (): number[] => [...st().heads.filter((x) => x >= 0 && x < stream().num_heads), ...shownPseudo()];
  const lineHeads = (): number => stream().num_heads + offeredPseudo(stream()).length;
  /** The log switch applies (one trace's weights, not a comparison's). */
  const logOn = (): boolean => analysing && st().log_scale;
  /** Many heads on the log scale: each line's opacity is its strength to this power (head_scale.ts), set by each draw. */
  let fade = 1;

  /** The current lines into `lines` (capacity kept between draws). */
  function collect(g: HeadLayout): void {
    const top = loaded();
    if (!top) { lines.n = 0; return; }
    lines = collectLines(lines, top, g, {
      heads: shownHeads(),
      query: summed().length && !hover ? -1 : focusedQuery(hover, rowOf(display.wordsQ, st().query)),
      key: hover?.side === "key" ? hover.i : -1,
      pairFilter: st().pair_filter,
      segQ: display.sideQ.segments,
      segK: display.sideK.segments,
      cap: MAX_LINES,
      relative: scale === "row",
    });
  }

  /** The lines and their off-screen counts: what the canvas shows, and what an image shows under the labels. */
  function paintCanvasPart(p: Painter, g: HeadLayout): { above: number; below: number } {
    collect(g);
    if (signed) paintSignedLines(p, lines, g, theme);
    else {
      fade = logFade(logOn(), shownHeads().length, lines, g);
      paintLines(p, lines, g, colors, lineHeads(), headOffsets(shownHeads(), lineHeads()), fade);
    }
    paintRollout(p, g);
    const edges = offscreenKeys(lines, g.height);
    paintOffscreenCounts(p, edges, g, theme);
    return edges;
  }

  /**
   * Max weight over the selected heads from the focused query to each key; for
   * several queries, their summed weight divided by their number (so a bar fits);
   * null when no query is focused.
   */
  let keyW = new Float32Array(0);
  function focusWeights(): Float32Array | null {
    const kLen = display.sideK.labels.length, qLen = display.sideQ.labels.length;
    if (keyW.length !== kLen) keyW = new Float32Array(kLen);
    const group = hover ? [] : summed();
    const a = current();
    if (group.length && a) {
      const total = sums(a, shownHeads(), group);
      for (let k = 0; k < kLen; k++) keyW[k] = (total[k] as number) / group.length;
      return keyW;
    }
    const f = focusedQuery(hover, rowOf(display.wordsQ, st().query));
    const top = loaded();
    if (f < 0 || f >= qLen || !top) return null;
    keyWeights(keyW, top, shownHeads(), f, signed);
    const rm = rowMax(top, shownHeads(), f);
    if (scale === "row" && rm > 0) for (let k = 0; k < keyW.length; k++) keyW[k] = (keyW[k] as number) / rm;
    return keyW;
  }

  /** The status line for several queries: how many, and the keys their summed attention goes to most. */
  function summedStatus(): string | null {
    const group = hover ? [] : summed();
    const a = current();
    if (!group.length || !a) return null;
    const total = sums(a, shownHeads(), group);
    const best = Array.from(total, (w, k) => [w, k] as const).sort((x, y) => y[0] - x[0]).slice(0, 3);
    const names = best.map(([w, k]) => `${display.sideK.labels[k] ?? k} ${w.toFixed(2)}`).join(", ");
    return `Summed attention of ${group.length} queries (shift-click toggles one): ${names}`;
  }

  /** Draw now; `false` when the viewport has no width (hidden, or out of the page) and nothing was drawn. */
  function draw(): boolean {
    const t0 = performance.now();
    segToggle.sync();
    view.classList.toggle("is-segments", segmentRows(meta, st()));
    if (segmentRows(meta, st())) return drawSegments(t0);
    const width = widthOf(viewport);
    if (!width) return false; // the scheduler tries again next frame, watchResize once it has a width
    if (revealPending) {
      // Opened on a locked query (a click in a long input's model-view cell): scroll to it first.
      revealPending = false;
      const pre = layout(width);
      viewport.style.height = `${pre.height}px`;
      body.style.height = `${pre.rows * ROW}px`;
      reveal(rowOf(display.wordsQ, st().query));
    }
    const g = layout(width);
    const s = st();
    loadRows(g);
    viewport.style.height = `${g.height}px`;
    body.style.height = `${g.rows * ROW}px`;
    const extra = (i: number): string => generationClasses(generation, s.step, i);
    const marks = (side: "query" | "key", selected: number | null, weights: Float32Array | null) =>
      ({ selected, hovered: hover?.side === side ? hover.i : null, weights,
         // A − B: a key's bar in A's colour where A attends more, in B's where B does (the legend).
         barColor: signed ? signedColor(1, theme) : theme.accent,
         ...(signed ? { negativeColor: signedColor(-1, theme) } : {}),
         extra: (i: number) => extra(tokenOf(side === "query" ? display.startsQ : display.startsK, i)) });
    const group = summed();
    placeRows(colQ, display.sideQ, display.sideQ.labels.length, g.first, g.last, { ...marks("query", rowOf(display.wordsQ, s.query), null), group });
    placeRows(colK, display.sideK, display.sideK.labels.length, g.first, g.last, marks("key", rowOf(display.wordsK, s.key), focusWeights()));
    swatches.sync();
    rolloutBox.el.hidden = !(analysing && stream().rollout_query);
    steps?.sync();
    analysis.sync();
    const note = summedStatus();
    if (note || (view.dataset.summed && !loadStatus)) setStatus(status, note); // a loading or error line stays
    if (note) view.dataset.summed = String(group.length);
    else delete view.dataset.summed;
    if (pairSelect) pairSelect.value = s.pair_filter;
    const dpr = window.devicePixelRatio || 1;
    const c = sizeCanvas(canvas, g.width, g.height, dpr);
    let edges = { above: 0, below: 0 };
    if (c) {
      c.clearRect(0, 0, g.width, g.height);
      edges = paintCanvasPart(canvasPainter(c, theme.font, dpr), g);
    }
    const rows = loaded(), f = focusedQuery(hover, rowOf(display.wordsQ, s.query));
    const rm = rows && f >= 0 && f < display.sideQ.labels.length ? rowMax(rows, shownHeads(), f) : 0;
    scaleBox.legend.textContent = scaleLegend(scale, f >= 0 ? rm : null, chosen ? stream().k_len : null, logOn() ? fade : null);
    // A focused row whose every weight is under 1/255 draws nothing: say so, and offer the row scale.
    faint.show(scale === "weight" && rm > 0 && rm * 255 < 1 ? `All weights of “${display.sideQ.labels[f] ?? f}” are below 1/255 (the largest is ${fmt(rm)}): too faint to draw at this scale.` : null);
    view.dataset.lines = String(lines.n);
    view.dataset.width = String(g.width);
    view.dataset.scale = scale;
    view.dataset.fade = String(fade);
    view.dataset.offscreen = `${edges.above},${edges.below}`;
    view.dataset.drawMs = (performance.now() - t0).toFixed(1);
    markDrawn(view, ready && !top.error());
    return true;
  }
  const sched = scheduler(draw);

  /** Segment rows in place of token rows: the panel draws, the token rows wait hidden. */
  function drawSegments(t0: number): boolean {
    const width = widthOf(view);
    if (!width) return false;
    if (loadStatus) { setStatus(status, null); loadStatus = null; }
    swatches.sync();
    const drawn = segPanel.draw(width, colors, theme);
    view.dataset.lines = segPanel.el.dataset.lines ?? "0";
    view.dataset.drawMs = (performance.now() - t0).toFixed(1);
    markDrawn(view, drawn);
    return true;
  }

  function load(): void {
    const s = st();
    segPanel.load();
    top.show(s.stream, s.layer, stream());
    prefetched = false;
    loadPseudo();
    sched.request();
  }

  /** The layer's pseudo-heads, once any is shown. */
  function loadPseudo(): void {
    const s = st();
    if (!analysing || !s.pseudo_heads.length || !offeredPseudo(stream()).length) return;
    const key = pseudoKey(s.stream, s.layer);
    if (key === pseudoChunkKey && pseudo) return;
    pseudoChunkKey = key;
    pseudo = data.peek(key) ?? null;
    if (pseudo) return;
    data.request([key]).then((m) => {
      if (pseudoChunkKey !== key) return;
      pseudo = m.get(key) ?? { key, arrays: {}, error: "missing" };
      if (pseudo.error) setStatus(status, `Could not load ${chunkWords(key, meta)}: ${pseudo.error}`, "error");
      sched.request();
    }).catch(() => undefined);
  }

  // Interaction.
  /** Shift-click: the group starts from the selected query, then each click adds or removes a token. */
  const toggledQueries = (token: number): number[] => {
    const s = st();
    const cur = s.queries.length ? s.queries : s.query != null ? [s.query] : [];
    const same = (q: number): boolean => rowOf(display.wordsQ, q) === rowOf(display.wordsQ, token);
    const next = cur.some(same) ? cur.filter((q) => !same(q)) : [...cur, token];
    return next.sort((a, b) => a - b);
  };
  const rowUnder = (e: Event): Hover => {
    const t = (e.target as HTMLElement | null)?.closest?.("[data-i]") as HTMLElement | null;
    const col = t?.parentElement as HTMLElement | null;
    if (!t || !col?.dataset.side) return null;
    return { side: col.dataset.side as "query" | "key", i: Number(t.dataset.i) };
  };
  for (const col of [colQ.el, colK.el]) {
    L.on(col, "mouseover", (e) => {
      const r = rowUnder(e);
      if (r && (r.side !== hover?.side || r.i !== hover.i)) { hover = r; sched.request(); }
    });
    L.on(col, "mouseleave", () => { if (hover) { hover = null; sched.request(); } });
    L.on<MouseEvent>(col, "click", (e) => {
      const r = rowUnder(e);
      if (!r) return;
      if (r.side === "query") {
        const token = tokenOf(display.startsQ, r.i);
        if (e.shiftKey) store.set({ queries: toggledQueries(token) });
        else store.set({ query: st().query === token ? null : token, queries: [] });
      } else {
        const token = tokenOf(display.startsK, r.i);
        store.set({ key: st().key === token ? null : token });
      }
    });
  }
  L.on(viewport, "scroll", () => sched.request(), { passive: true });

  const search = tokenSearch(L, () => display.sideQ.labels, () => rowOf(display.wordsQ, st().query) ?? -1,
    (row) => store.set({ query: tokenOf(display.startsQ, row) }));
  bar.append(swatchBox, segToggle.el, scaleBox.el, search);
  // Long self-attention: the locked query's rollout, computed by Python for that query alone.
  let rolloutOn = false;
  let rollout: { key: string; chunk: Chunk | null } | null = null;
  let rolloutLines = emptyLines();
  const rolloutBox = rolloutToggle(L, (on) => { rolloutOn = on; loadRollout(); sched.request(); });
  bar.append(rolloutBox.el);
  /** The rollout chunk the current layer and locked query need, or null (off, no query, words mode). */
  const rolloutWanted = (): string | null => {
    const s = st();
    if (!rolloutOn || !analysing || !stream().rollout_query || s.words || s.query == null) return null;
    return queryRolloutKey(s.stream, s.layer, s.query);
  };
  function loadRollout(): void {
    const key = rolloutWanted();
    if (!key) { rollout = null; return; }
    if (rollout?.key === key) return;
    rollout = { key, chunk: data.peek(key) ?? null };
    if (rollout.chunk) return;
    const q = st().query ?? 0;
    setStatus(status, `Computing the rollout of “${display.sideQ.labels[rowOf(display.wordsQ, q) ?? q] ?? q}” through layer ${stream().layers[st().layer] ?? st().layer}…`);
    data.request([key]).then((m) => {
      if (rollout?.key !== key) return;
      rollout.chunk = m.get(key) ?? { key, arrays: {}, error: "missing" };
      setStatus(status, rollout.chunk.error ? `Could not load ${chunkWords(key, meta)}: ${rollout.chunk.error}` : null, rollout.chunk.error ? "error" : "info");
      sched.request();
    }).catch(() => undefined);
  }
  /** The rollout's lines over the heads', in the text colour (all relative to its largest weight). */
  function paintRollout(p: Painter, g: HeadLayout): void {
    const c = rollout?.chunk, q = st().query;
    if (!c || c.error || q == null || rollout?.key !== rolloutWanted()) { view.dataset.rolloutLines = "0"; return; }
    const rows = queryRolloutRows(c, stream().q_len, q);
    rolloutLines = collectLines(rolloutLines, rows, g, { heads: [0], query: q, key: -1, pairFilter: "all", segQ: null, segK: null, cap: MAX_LINES, relative: true });
    paintLines(p, rolloutLines, g, [hex(theme.fg)], 1);
    view.dataset.rolloutLines = String(rolloutLines.n);
  }
  if (signed) bar.append(diffLegend());
  const unSave = saveButtons(bar, {
    name: () => `attnscope-head-${segmentRows(meta, st()) ? `${meta.segments?.by ?? "segments"}-` : ""}L${st().layer}`,
    // Above the picture (js/export_image.ts): under it, the caption met the last label.
    caption: () => {
      if (segmentRows(meta, st())) return segPanel.caption();
      const g = layout(), s = st(), { first, last } = visibleRows(g);
      const shown = last - first + 1 < g.rows ? [`rows ${first + 1}–${last + 1} of ${g.rows} drawn (those on screen; scroll the view to export others)`] : [];
      const options = [s.hide_special ? "special tokens hidden" : "", s.words ? "words" : ""].filter(Boolean);
      return [
        exportCaption(meta.title ?? "", stream().layers[s.layer] ?? s.layer, shownHeads(), stream().num_heads, s.query == null ? null : display.sideQ.labels[rowOf(display.wordsQ, s.query) ?? 0] ?? null),
        [scaleBox.legend.textContent ?? "", ...options].filter(Boolean).join(" · "),
        ...shown,
      ].filter(Boolean);
    },
    picture: () => {
      if (segmentRows(meta, st())) return segPanel.picture(widthOf(view), colors, theme);
      const g = layout();
      const s = st();
      return {
        width: g.width, height: g.height, background: hex(theme.bg), font: theme.font,
        paint: (p) => {
          paintCanvasPart(p, g);
          paintTokenLabels(p, g, display.sideQ, display.sideK, theme, generation ? rowOf(display.wordsQ, generation.prompt) : null, {
            query: s.query == null ? null : rowOf(display.wordsQ, s.query),
            key: s.key == null ? null : rowOf(display.wordsK, s.key),
          });
        },
      };
    },
  });

  /** Head colours, then the pseudo-heads' colours (their lines come after the real heads). */
  const lineColors = (): string[] => [...swatches.build(theme.dark), ...offeredPseudo(stream()).map((p) => pseudoColor(p, theme.dark))];

  function rebuildRows(): void {
    display = displayOf(meta, stream(), analysing && st().words);
    clearRows(colQ);
    clearRows(colK);
  }

  function rebuildStream(): void {
    rebuildRows();
    colors = lineColors();
    analysis.build(theme.dark);
    pairSelect?.remove();
    pairSelect = display.tokensQ.segments && display.tokensK.segments ? pairFilterSelect(L, store) : null;
    if (pairSelect) bar.prepend(pairSelect);
    generation = generationOf(meta, st().stream);
    steps?.stop();
    steps?.el.remove();
    steps = generation ? stepControl(L, store, generation, () => display.tokensQ, lookedAt) : null;
    if (steps) bar.prepend(steps.el);
  }

  /** With one head selected (a model-view click), its strongest key at a step, once that row is loaded. */
  function lookedAt(step: number): LookedAt | null {
    const heads = st().heads, rows = ready ? top.rows() : null;
    if (!rows || heads.length !== 1 || !generation) return null;
    const key = strongestKey(rows, heads[0] as number, queryOfStep(generation, step));
    return key == null ? null : { head: heads[0] as number, key };
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
      colors = lineColors();
      analysis.build(theme.dark);
    }
    if (changed.has("stream") && chosen) { scale = openingScale(); scaleBox.select.value = scale; }
    if (changed.has("stream")) rebuildStream();
    else if (changed.has("words")) rebuildRows();
    if (changed.has("pseudo_heads")) loadPseudo();
    if (changed.has("stream") || changed.has("layer") || changed.has("segment_rows")) load();
    if (["stream", "layer", "query", "words"].some((k) => changed.has(k as keyof AppState))) loadRollout();
    if (changed.has("query") || changed.has("key")) reveal(changed.has("query") ? rowOf(display.wordsQ, st().query) : rowOf(display.wordsK, st().key));
    sched.request();
  });
  const unResize = watchResize(viewport, () => sched.request());
  const unResizeSegments = watchResize(segPanel.el, () => sched.request()); // the token rows are hidden then

  rebuildStream();
  load();

  return () => {
    sched.cancel();
    steps?.stop();
    unsub();
    unResize();
    unResizeSegments();
    unSave();
    L.clear();
    view.remove();
  };
}
