// Model view: a grid, one row per layer and one column per head, each cell the
// head's thumbnail, all drawn into one canvas with one putImageData. The grid's
// geometry and picture are in model_grid.ts; this file wires them to the store.
import { hex, LONG_INPUT, readTheme, weightLut, type HeatScale, type ThemeColors } from "../../colors";
import { attnKey, statsKey, thumbsKey } from "../../chunk_keys";
import { chunkWords } from "../../chunk_words";
import { arr } from "../../data";
import { saveButtons } from "../../export_image";
import { generationOf } from "../../generation";
import { offeredViews } from "../../offered_views";
import { canvasPainter, type PixelScratch } from "../../paint/canvas_painter";
import { keySide, querySide, streamOf } from "../../tokens";
import type { Chunk, Cleanup, ViewContext } from "../../types";
import { h, listeners, markDrawn, scheduler, setStatus, sizeCanvas, watchResize, widthOf } from "../common";
import { cellAt, GAP, gridGeometry, heatmapTile, paintGrid, placedOrigin, rowsToOwnMax, thumbLut, THUMB_DECADES, type GridGeometry, type GridScene, type Thumbnails } from "./model_grid";
import { divergenceNote, gridOrder, gridOrderSelect, signedThumbnails } from "../compare/compare_grid";
import { divergingLut } from "../compare_colors";
import { AXIS_LEFT, AXIS_TOP, drawPreview as paintPreview, MAP } from "./model_preview";
import { cellNumbers, layerRanking, paintBadges, rankSelect, statValues } from "./model_stats";
import { mountOverview } from "../overview/overview";

const PREVIEW_W = AXIS_LEFT + MAP + 4;
const HOVER_FETCH_MS = 120;

export function renderModelView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  /** A comparison's A − B: signed thumbnails on the diverging scale. */
  const signed = ctx.side === "diff";
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-modelview", { "data-testid": "model-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const hint = h("span", "attnscope-hint");
  const offered = offeredViews(meta);
  const opens = [
    offered.includes("head") ? `click a cell to open it in the head view${streamOf(meta, store.get().stream).q_len > LONG_INPUT ? " at the query row you click" : ""}` : "",
    offered.includes("neuron") ? "shift-click for the neuron view" : "",
  ].filter(Boolean).join(", ");
  hint.textContent = `Rows: layers · columns: heads. Hover a cell to enlarge it${opens ? `; ${opens}` : ""}.`;
  // A generation: cells may show the generated tokens' rows only (the `generated_only` trait).
  const onlyBox = h("input", "", { type: "checkbox", "data-testid": "generated-only" });
  const only = h("label", "attnscope-check", { title: "Each cell shows only the rows of the generated tokens" });
  only.append(onlyBox, " generated rows only");
  L.on(onlyBox, "change", () => store.set({ generated_only: onlyBox.checked }));
  const scaleSel = h("select", "attnscope-select", { "aria-label": "Colour scale", "data-testid": "model-scale-select" });
  for (const [value, label] of [["linear", "scale: linear"], ["log", "scale: log"]] as const) {
    const o = h("option", "", { value });
    o.textContent = label;
    scaleSel.append(o);
  }
  const legend = h("span", "attnscope-scale", { "data-testid": "model-scale" });
  // A comparison has no statistics of its own (docs/protocol.md, "Comparisons").
  const statistics = meta.comparison ? [] : meta.statistics ?? [];
  const rankBy = statistics.length ? rankSelect(L, store, statistics) : null;
  if (rankBy) bar.append(rankBy);
  bar.append(only, hint, scaleSel, legend);
  if (meta.comparison) bar.append(gridOrderSelect(L, store));
  const status = h("div", "attnscope-status");
  const wrap = h("div", "attnscope-mv-wrap");
  const canvas = h("canvas", "attnscope-mv-canvas", { "data-testid": "model-canvas", role: "img", "aria-label": "Attention of every layer and head" });
  const preview = h("div", "attnscope-mv-preview", { "data-testid": "model-preview" });
  const pcanvas = h("canvas");
  const pcap = h("div", "attnscope-mv-caption");
  preview.append(pcanvas, pcap);
  preview.hidden = true;
  wrap.append(canvas, preview);
  view.append(bar, status, wrap);
  root.append(view);
  // The whole N × N of one head, zoomable (a comparison's sides have no tiles).
  const unOverview = ctx.side ? () => undefined : mountOverview(ctx, view);

  const stream = () => streamOf(meta, store.get().stream);
  let theme: ThemeColors = readTheme(root, store.get().resolved_theme === "dark");
  let heat: HeatScale = "linear";
  // Thumbnails are log-encoded bytes (protocol.md); a full-resolution preview is linear bytes.
  const lutOf = (t: ThemeColors): Uint8ClampedArray => (signed ? divergingLut(t) : thumbLut(t, heat));
  const attnLutOf = (t: ThemeColors): Uint8ClampedArray => (signed ? divergingLut(t) : weightLut(t, heat));
  let lut = lutOf(theme);
  let attnLut = attnLutOf(theme);
  /** Linear scale of a long input: each row of a cell to its own largest weight (else a causal cell is its first row). */
  const perRow = (): boolean => !signed && heat === "linear" && stream().k_len > LONG_INPUT;
  const sayScale = (): void => {
    legend.textContent = signed
      ? "each cell scaled to its own largest change"
      : heat === "log"
        ? `log scale over ${THUMB_DECADES} decades of each cell's largest weight (faintest: 10⁻${THUMB_DECADES} of it)`
        : perRow()
          ? `linear, each row of a cell scaled to its own largest weight (over ${LONG_INPUT} tokens a row's weights are too faint beside the cell's largest)`
          : "each cell scaled to its own largest weight (linear)";
    view.dataset.scale = heat;
    view.dataset.perRow = String(perRow());
  };
  sayScale();
  L.on(scaleSel, "change", () => { heat = scaleSel.value as HeatScale; lut = lutOf(theme); attnLut = attnLutOf(theme); sayScale(); sched.request(); });
  let thumbs: Chunk | null = null;
  let loadedKey = "";
  let geo: GridGeometry = { cell: 0, width: 0, height: 0 };
  const pixels: PixelScratch = { image: null };
  let hoverCell: { l: number; h: number } | null = null;
  let hoverTimer: ReturnType<typeof setTimeout> | null = null;

  /** First query row the cells show: the prompt's length when only generated rows are shown, else 0. */
  const firstRow = (): number => {
    const g = generationOf(meta, store.get().stream);
    return g && store.get().generated_only ? g.prompt : 0;
  };
  /** Row-scaled copy of the loaded thumbnails' bytes, made once per chunk. */
  let ownMax: { from: Uint8Array; data: Uint8Array } | null = null;
  /** The loaded thumbnails; rows and columns from the chunk's shape (falls back to _meta). */
  const thumbnails = (): Thumbnails | null => {
    if (!thumbs || thumbs.error) return null;
    const sm = stream(), a = arr(thumbs, "thumbs");
    if (signed) return signedThumbnails(thumbs, sm);
    const rows = a.shape[2] ?? sm.thumb_rows, cols = a.shape[3] ?? sm.thumb_cols;
    let bytes = a.data as Uint8Array;
    if (perRow()) {
      if (ownMax?.from !== bytes) ownMax = { from: bytes, data: rowsToOwnMax(bytes, cols) };
      bytes = ownMax.data;
    }
    return { data: bytes, rows, cols };
  };
  let stats: Chunk | null = null;
  let statsLoaded = "";
  /** The ranking statistic's values, once its chunk is here; null without a ranking. */
  const ranked = (): Float32Array | null => statValues(stats, store.get().rank_by);
  const scene = (): GridScene => {
    const sm = stream(), s = store.get(), values = ranked();
    const compared = gridOrder(meta, s);
    const order = compared ?? (values ? layerRanking(values, sm.layers.length, sm.num_heads) : null);
    return { geo, layerNumbers: sm.layers, heads: sm.num_heads, thumbs: thumbnails(), lut, theme, selected: { layer: s.layer, head: s.head }, order, orderWithinLayers: !compared };
  };
  /** The grid, and the ranking's badges over it. */
  const paintAll = (p: Parameters<typeof paintGrid>[0], sc: GridScene): void => {
    paintGrid(p, sc);
    const values = ranked();
    if (values && sc.order && sc.orderWithinLayers) paintBadges(p, sc.geo, { values, order: sc.order, layers: sc.layerNumbers.length, heads: sc.heads }, sc.theme);
  };

  /** Draw now; `false` when the view has no width (hidden) and nothing was drawn. */
  function draw(): boolean {
    const sm = stream();
    only.hidden = !generationOf(meta, store.get().stream);
    onlyBox.checked = store.get().generated_only;
    const width = widthOf(view);
    if (!width) return false; // the scheduler tries again next frame, watchResize once it has a width
    geo = gridGeometry(sm.layers.length, sm.num_heads, width);
    const dpr = window.devicePixelRatio || 1;
    const c = sizeCanvas(canvas, geo.width, geo.height, dpr);
    if (c) {
      const p = canvasPainter(c, theme.font, dpr, pixels);
      p.rect(0, 0, geo.width, geo.height, hex(theme.bg));
      paintAll(p, scene());
    }
    view.dataset.rankedBy = ranked() ? (store.get().rank_by ?? "") : "";
    if (rankBy) rankBy.value = store.get().rank_by ?? "";
    markDrawn(view, !!thumbs && !thumbs.error);
    return true;
  }
  const sched = scheduler(draw);

  function load(): void {
    const key = thumbsKey(store.get().stream, firstRow() || undefined);
    if (key === loadedKey) return;
    loadedKey = key;
    thumbs = data.peek(key) ?? null;
    if (!thumbs) setStatus(status, "Loading thumbnails…");
    data.request([key]).then((m) => {
      if (key !== loadedKey) return;
      thumbs = m.get(key) ?? { key, arrays: {}, error: "missing" };
      setStatus(status, thumbs.error ? `Could not load ${chunkWords(key, meta)}: ${thumbs.error}` : null, thumbs.error ? "error" : "info");
      sched.request();
    }).catch(() => undefined);
    sched.request();
  }

  /** The statistics of the stream, once a ranking is chosen (or to show numbers on hover). */
  function loadStats(onHover = false): void {
    const key = statsKey(store.get().stream);
    if (!statistics.length || !(store.get().rank_by || onHover) || key === statsLoaded) return;
    statsLoaded = key;
    stats = data.peek(key) ?? null;
    data.request([key]).then((m) => {
      if (key !== statsLoaded) return;
      stats = m.get(key) ?? { key, arrays: {}, error: "missing" };
      if (stats.error) setStatus(status, `Could not load ${chunkWords(key, meta)}: ${stats.error}`, "error");
      if (hoverCell) drawPreview(hoverCell);
      sched.request();
    }).catch(() => undefined);
  }

  /** The cell under the pointer, as (layer, head): columns are ranks when heads are ranked. */
  function cellUnder(e: MouseEvent): { l: number; h: number } | null {
    const r = canvas.getBoundingClientRect();
    const sm = stream();
    return cellAt(geo, e.clientX - r.left, e.clientY - r.top, sm.layers.length, sm.num_heads, scene().order);
  }

  /** The hovered cell, large: from its full-resolution chunk once that has arrived, else its thumbnail. */
  function drawPreview(cell: { l: number; h: number }): void {
    const s = store.get();
    const sm = stream();
    const from = firstRow();
    const numbers = cellNumbers(stats, statistics, sm.num_heads, cell.l, cell.h);
    pcap.textContent = `Layer ${sm.layers[cell.l] ?? cell.l} · head ${cell.h}${from ? " · generated rows" : ""}${divergenceNote(meta, s.stream, cell.l, cell.h)}${numbers.length ? `\n${numbers.join(" · ")}` : ""}`;
    const place = { x: AXIS_LEFT, y: AXIS_TOP, w: MAP, h: MAP };
    const full = data.peek(attnKey(s.stream, cell.l, cell.h));
    const small = thumbnails();
    let tile = null, rowsFrom = 0;
    if (full && !full.error) {
      rowsFrom = from;
      const rm = arr(full, "rowmax").data.subarray(from);
      let mx = 0;
      for (const v of rm) if (v > mx) mx = v;
      // Keep per-row quantisation honest: scale each row by rowmax / max.
      // (Each row's bytes are to its own largest: left so when the grid's rows are too.)
      const scale = perRow() ? null : Array.from(rm, (v) => (mx > 0 ? v / mx : 0));
      const weight = arr(full, "weight").data.subarray(from * sm.k_len);
      tile = heatmapTile(place, weight, sm.q_len - from, sm.k_len, scale, attnLut, undefined, signed);
      preview.dataset.source = "attn";
    } else if (small) {
      const n = small.rows * small.cols, at = (cell.l * sm.num_heads + cell.h) * n;
      const gain = small.gain?.(cell.l * sm.num_heads + cell.h) ?? null;
      tile = heatmapTile(place, small.data.subarray(at, at + n), small.rows, small.cols, gain, lut, undefined, small.signed);
      preview.dataset.source = "thumb";
    }
    // Nothing loaded: the axes alone, the previous cell blanked out.
    paintPreview(pcanvas, { tile, sideQ: querySide(meta, sm), sideK: keySide(meta, sm), theme, firstQuery: rowsFrom });
  }

  /**
   * The preview beside its cell, never past the grid's box (which scrolls, and would clip
   * it): lower rows open it upward, and a grid shorter than it (few layers) grows to hold it.
   */
  function placePreview(y: number): void {
    const ph = preview.offsetHeight;
    wrap.style.minHeight = ph > geo.height ? `${ph}px` : "";
    preview.style.top = `${Math.max(0, Math.min(y, Math.max(geo.height, ph) - ph))}px`;
  }

  L.on<MouseEvent>(canvas, "mousemove", (e) => {
    const cell = cellUnder(e);
    if (!cell) { hideHover(); return; }
    preview.hidden = false;
    const origin = placedOrigin(geo, cell.l, cell.h, stream().num_heads, scene().order);
    preview.style.left = `${Math.min(origin.x + geo.cell + GAP + 8, Math.max(0, geo.width - PREVIEW_W - 8))}px`;
    placePreview(origin.y);
    if (hoverCell?.l === cell.l && hoverCell.h === cell.h) return;
    hoverCell = cell;
    loadStats(true);
    drawPreview(cell);
    if (hoverTimer) clearTimeout(hoverTimer);
    const key = attnKey(store.get().stream, cell.l, cell.h);
    if (data.peek(key)) return;
    hoverTimer = setTimeout(() => {
      hoverTimer = null;
      data.request([key]).then(() => {
        if (hoverCell?.l === cell.l && hoverCell.h === cell.h) drawPreview(cell);
      }).catch(() => undefined);
    }, HOVER_FETCH_MS);
  });
  const hideHover = (): void => {
    hoverCell = null;
    preview.hidden = true;
    if (hoverTimer) { clearTimeout(hoverTimer); hoverTimer = null; }
  };
  L.on(canvas, "mouseleave", hideHover);
  L.on<MouseEvent>(canvas, "click", (e) => {
    const cell = cellUnder(e);
    if (!cell) return;
    const open = { layer: cell.l, heads: [cell.h], head: cell.h, view: e.shiftKey ? "neuron" as const : "head" as const };
    // A long input's cell is a map of its rows: the click's height picks the query the view opens on.
    const query = clickedQuery(e, cell);
    store.set(query == null ? open : { ...open, query });
  });
  /** The query row at the click's height within a long input's cell (rows `firstRow()..q_len`), or null. */
  function clickedQuery(e: MouseEvent, cell: { l: number; h: number }): number | null {
    const sm = stream();
    if (signed || sm.q_len <= LONG_INPUT) return null;
    const r = canvas.getBoundingClientRect();
    const origin = placedOrigin(geo, cell.l, cell.h, sm.num_heads, scene().order);
    const share = Math.max(0, Math.min(1, (e.clientY - r.top - origin.y) / geo.cell));
    const from = firstRow();
    return Math.min(sm.q_len - 1, from + Math.floor(share * (sm.q_len - from)));
  }

  const unSave = saveButtons(bar, {
    name: () => `attnscope-model-${store.get().stream}`,
    caption: () => {
      const s = store.get();
      const stat = ranked() ? statistics.find((x) => x.name === s.rank_by) : undefined;
      return [
        `${meta.title ?? "attnscope"} · model view · ${stream().label ?? s.stream}${s.generated_only ? " · generated tokens' rows only" : ""}`,
        `rows: layers, columns: heads · ${legend.textContent ?? ""}`,
        ...(stat ? [`ranked by ${stat.label}: each layer's heads strongest first (${stat.formula})`] : []),
      ];
    },
    picture: () => {
      const s = scene();
      return { width: geo.width, height: geo.height, background: hex(theme.bg), font: theme.font, paint: (p) => paintAll(p, s) };
    },
  });

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      theme = readTheme(root, store.get().resolved_theme === "dark");
      lut = lutOf(theme);
      attnLut = attnLutOf(theme);
    }
    if (changed.has("stream")) sayScale();
    if (changed.has("stream") || changed.has("generated_only")) load();
    if (changed.has("stream") || changed.has("rank_by")) loadStats();
    sched.request();
  });
  const unResize = watchResize(view, () => sched.request());
  load();
  loadStats();

  return () => {
    sched.cancel();
    hideHover();
    unsub();
    unResize();
    unSave();
    unOverview();
    L.clear();
    view.remove();
  };
}
