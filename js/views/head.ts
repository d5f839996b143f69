// Head view: query tokens left, key tokens right, one line per (query, key, head)
// from the top-k chunk. Virtualised rows, one canvas pass, capped line count.
import { headColor, hex, readTheme, rgba, textOn, type ThemeColors } from "../colors";
import { topKey } from "../chunk_keys";
import { arr } from "../data";
import { PAIR_FILTER_LABELS } from "../labels";
import { PAIR_FILTERS } from "../selection";
import { saveButtons, svgDocument, xmlEscape } from "../export_image";
import { keySide, pairPasses, querySide, streamOf, tokenClasses, type Side } from "../tokens";
import type { AppState, Chunk, Cleanup, ViewContext } from "../types";
import { h, listeners, markDrawn, scheduler, setStatus, sizeCanvas, watchResize, widthOf } from "./common";

export const ROW = 18;
const COL_W = 128;
const MAX_VIEW_H = 560;
const OVERSCAN = 4;
/** Most lines one draw strokes; weaker lines are dropped first. */
export const MAX_LINES = 3000;
const SVG_LINES = 3000;
const BUCKETS = 10;

interface Lines {
  n: number;
  yq: Float32Array;
  yk: Float32Array;
  w: Float32Array;
  head: Uint16Array;
  order: Uint32Array;
  hist: Uint32Array;
}

function growLines(l: Lines, need: number): Lines {
  if (l.yq.length >= need) return l;
  const cap = Math.max(need, l.yq.length * 2);
  return { ...l, yq: new Float32Array(cap), yk: new Float32Array(cap), w: new Float32Array(cap), head: new Uint16Array(cap), order: new Uint32Array(cap) };
}

export function renderHeadView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-headview", { "data-testid": "head-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const swatches = h("div", "attnscope-swatches", { role: "group", "aria-label": "Heads (click toggles, double-click shows only that head)" });
  const status = h("div", "attnscope-status");
  const viewport = h("div", "attnscope-hv-viewport", { "data-testid": "head-viewport" });
  const body = h("div", "attnscope-hv-body");
  const canvas = h("canvas", "attnscope-hv-canvas", { "data-testid": "head-canvas", "aria-hidden": "true" });
  const colQ = h("div", "attnscope-hv-col attnscope-hv-q", { "data-side": "query", "aria-label": "Query tokens" });
  const colK = h("div", "attnscope-hv-col attnscope-hv-k", { "data-side": "key", "aria-label": "Key tokens" });
  body.append(canvas, colQ, colK);
  viewport.append(body);
  view.append(bar, status, viewport);
  root.append(view);

  let pairSelect: HTMLSelectElement | null = null;
  let chunk: Chunk | null = null;
  let chunkKey = "";
  let hover: { side: "query" | "key"; i: number } | null = null;
  let lines: Lines = { n: 0, yq: new Float32Array(0), yk: new Float32Array(0), w: new Float32Array(0), head: new Uint16Array(0), order: new Uint32Array(0), hist: new Uint32Array(256) };
  let theme: ThemeColors = readTheme(root, store.get().resolved_theme === "dark");
  let colors: string[] = [];
  const poolQ: HTMLDivElement[] = [];
  const poolK: HTMLDivElement[] = [];

  const st = (): AppState => store.get();
  const stream = () => streamOf(meta, st().stream);
  let sideQ: Side = querySide(meta, stream());
  let sideK: Side = keySide(meta, stream());

  /** Keys per query in the loaded chunk (its shape is the truth; _meta only announces it). */
  const topK = (): number => (chunk && !chunk.error ? arr(chunk, "weight").shape[2] ?? stream().top_k : stream().top_k);
  /** Key of slot `t` in a row: the chunk's index, or the slot itself when every key is sent in order. */
  const keyAt = (index: ArrayLike<number> | null, at: number, t: number): number => (index ? (index[at] as number) : t);

  function geometry(): { width: number; vh: number; rows: number; first: number; last: number; x0: number; x1: number } {
    const s = stream();
    const rows = Math.max(s.q_len, s.k_len);
    const vh = Math.min(rows * ROW, MAX_VIEW_H);
    const width = Math.max(widthOf(viewport), 2 * COL_W + 120);
    const top = viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const last = Math.min(rows - 1, Math.ceil((top + vh) / ROW) + OVERSCAN);
    return { width, vh, rows, first, last, x0: COL_W + 2, x1: width - COL_W - 2 };
  }

  function buildSwatches(): void {
    swatches.replaceChildren();
    const s = stream();
    colors = Array.from({ length: s.num_heads }, (_, i) => headColor(i, theme.dark));
    for (let i = 0; i < s.num_heads; i++) {
      const b = h("button", "attnscope-swatch", { type: "button", "data-head": String(i), "aria-label": `Head ${i}` });
      b.style.setProperty("--swatch", colors[i] as string);
      b.style.setProperty("--swatch-fg", textOn(colors[i] as string)); // readable on yellow and light grey too
      b.textContent = String(i);
      swatches.append(b);
    }
    syncSwatches();
  }

  function syncSwatches(): void {
    const on = new Set(st().heads);
    for (const b of swatches.children) {
      const i = Number((b as HTMLElement).dataset.head);
      b.setAttribute("aria-pressed", on.has(i) ? "true" : "false");
    }
  }

  function buildPairFilter(): void {
    pairSelect?.remove();
    pairSelect = null;
    if (!sideQ.segments || !sideK.segments) return;
    const sel = h("select", "attnscope-select", { "aria-label": "Sentence pair filter", "data-testid": "pair-filter" });
    for (const v of PAIR_FILTERS) {
      const o = h("option", "", { value: v });
      o.textContent = PAIR_FILTER_LABELS[v];
      sel.append(o);
    }
    sel.value = st().pair_filter;
    L.on(sel, "change", () => store.set({ pair_filter: sel.value as AppState["pair_filter"] }));
    bar.prepend(sel);
    pairSelect = sel;
  }

  /** Max weight over the selected heads from the focused query to each key (0 when none is focused). */
  let keyW = new Float32Array(0);
  function focusWeights(): boolean {
    const sm = stream();
    if (keyW.length !== sm.k_len) keyW = new Float32Array(sm.k_len);
    keyW.fill(0);
    const s = st();
    const f = hover?.side === "query" ? hover.i : hover ? -1 : s.query ?? -1;
    if (f < 0 || f >= sm.q_len || !chunk || chunk.error) return false;
    const index = chunk.arrays.index?.data ?? null, weight = arr(chunk, "weight").data, rowmax = arr(chunk, "rowmax").data;
    const Q = sm.q_len, T = topK();
    for (const hd of s.heads) {
      if (hd >= sm.num_heads) continue;
      const rm = rowmax[hd * Q + f] as number, base = (hd * Q + f) * T;
      for (let t = 0; t < T; t++) {
        const k = keyAt(index, base + t, t), w = ((weight[base + t] as number) / 255) * rm;
        if (w > (keyW[k] as number)) keyW[k] = w;
      }
    }
    return true;
  }

  function placeRows(col: HTMLElement, pool: HTMLDivElement[], side: Side, n: number, first: number, last: number, sideName: "query" | "key", weights: Float32Array | null = null): void {
    const count = Math.max(0, Math.min(last, n - 1) - first + 1);
    while (pool.length < count) {
      const d = h("div", "attnscope-tok");
      pool.push(d);
      col.append(d);
    }
    const s = st();
    const sel = sideName === "query" ? s.query : s.key;
    for (let p = 0; p < pool.length; p++) {
      const d = pool[p] as HTMLDivElement;
      if (p >= count) { d.hidden = true; continue; }
      const i = first + p;
      d.hidden = false;
      if (d.dataset.i !== String(i)) {
        d.dataset.i = String(i);
        d.textContent = side.labels[i] ?? "";
        d.title = `${side.raw[i] ?? ""} (#${i})`;
        d.style.top = `${i * ROW}px`;
      }
      let cls = tokenClasses(side, i);
      if (sel === i) cls += " is-selected";
      if (hover && hover.side === sideName && hover.i === i) cls += " is-hover";
      if (d.className !== cls) d.className = cls;
      // Keys of the focused query: a bar whose length is the weight.
      const w = weights ? (weights[i] ?? 0) : 0;
      const shadow = w > 0.005 ? `inset ${Math.round(w * (COL_W - 8))}px 0 0 ${rgba(theme.accent, 0.3)}` : "";
      if (d.style.boxShadow !== shadow) d.style.boxShadow = shadow;
    }
  }

  /** Collect the lines to draw for the current state into `lines` (no allocation when capacity suffices). */
  function collect(g: ReturnType<typeof geometry>, cap: number): void {
    lines.n = 0;
    if (!chunk || chunk.error) return;
    const s = st();
    const sm = stream();
    const index = chunk.arrays.index?.data ?? null;
    const weight = arr(chunk, "weight").data;
    const rowmax = arr(chunk, "rowmax").data;
    const H = sm.num_heads, Q = sm.q_len, T = topK();
    const heads = s.heads.filter((x) => x >= 0 && x < H);
    const focusQ = hover?.side === "query" ? hover.i : hover?.side === "key" ? -1 : s.query ?? -1;
    const focusK = hover?.side === "key" ? hover.i : -1;
    const q0 = focusQ >= 0 ? focusQ : g.first;
    const q1 = focusQ >= 0 ? focusQ : Math.min(g.last, Q - 1);
    const segQ = sideQ.segments, segK = sideK.segments;
    const filter = segQ && segK ? s.pair_filter : "all";
    const top = viewport.scrollTop;
    const hist = lines.hist;
    hist.fill(0);
    const minW8 = 1; // weights under 1/255 of the layer's scale are invisible anyway
    /** Every candidate line: (head, query, key, weight as 0..255). */
    const visit = (fn: (hd: number, q: number, k: number, b: number, wt: number) => void): void => {
      for (const hd of heads) {
        for (let q = q0; q <= q1; q++) {
          const rm = rowmax[hd * Q + q] as number;
          if (!(rm > 0)) continue;
          const base = (hd * Q + q) * T;
          for (let t = 0; t < T; t++) {
            const w8 = weight[base + t] as number;
            if (w8 === 0) continue;
            const k = keyAt(index, base + t, t);
            if (focusK >= 0 && k !== focusK) continue;
            if (filter !== "all" && !pairPasses(filter, segQ?.[q], segK?.[k])) continue;
            const b = Math.min(255, Math.floor(w8 * rm));
            if (b >= minW8) fn(hd, q, k, b, (w8 / 255) * rm);
          }
        }
      }
    };
    // Pass 1: histogram of weights, to find the threshold that keeps at most `cap` lines.
    visit((_h, _q, _k, b) => { hist[b] = (hist[b] as number) + 1; });
    let total = 0, thr = 0;
    for (let b = 255; b >= 0; b--) {
      total += hist[b] as number;
      if (total > cap) { thr = b + 1; break; }
    }
    lines = growLines(lines, Math.min(total, cap) + 1);
    const { yq, yk, w, head } = lines;
    let n = 0;
    const clampY = (y: number): number => Math.max(1, Math.min(g.vh - 1, y)); // off-screen: to the edge
    visit((hd, q, k, b, wt) => {
      if (b < thr || n >= cap) return;
      yq[n] = clampY(q * ROW + ROW / 2 - top);
      yk[n] = clampY(k * ROW + ROW / 2 - top);
      w[n] = wt;
      head[n] = hd;
      n++;
    });
    lines.n = n;
  }

  const edges = { above: 0, below: 0 };
  function paintLines(c: CanvasRenderingContext2D, g: ReturnType<typeof geometry>): void {
    const { n, yq, yk, w, head } = lines;
    // Counting sort by (opacity bucket, head): one stroke per group, strongest drawn last (on top).
    const H = stream().num_heads;
    const groups = H * BUCKETS;
    const counts = new Uint32Array(groups + 1);
    const key = (i: number): number => Math.min(BUCKETS - 1, Math.floor((w[i] as number) * BUCKETS)) * H + (head[i] as number);
    for (let i = 0; i < n; i++) { const k = key(i) + 1; counts[k] = (counts[k] as number) + 1; }
    for (let i = 1; i <= groups; i++) counts[i] = (counts[i] as number) + (counts[i - 1] as number);
    const starts = counts.slice(0, groups);
    const order = lines.order;
    for (let i = 0; i < n; i++) { const k = key(i); order[starts[k] as number] = i; starts[k] = (starts[k] as number) + 1; }
    c.lineWidth = n > 1000 ? 1 : 1.5; // many lines: thinner, cheaper to rasterise and easier to read
    for (let grp = 0; grp < groups; grp++) {
      const from = counts[grp] as number, to = counts[grp + 1] as number;
      if (from === to) continue;
      const hd = grp % H, b = Math.floor(grp / H);
      c.strokeStyle = colors[hd] ?? "#888";
      c.globalAlpha = (b + 0.5) / BUCKETS; // opacity ≈ weight, as in bertviz
      c.beginPath();
      for (let o = from; o < to; o++) {
        const i = order[o] as number;
        c.moveTo(g.x0, yq[i] as number);
        c.lineTo(g.x1, yk[i] as number);
      }
      c.stroke();
    }
    c.globalAlpha = 1;
    // Lines to keys above or below the visible rows end at the edge: say how many.
    let above = 0, below = 0;
    for (let i = 0; i < n; i++) {
      const y = yk[i] as number;
      if (y <= 1) above++;
      else if (y >= g.vh - 1) below++;
    }
    edges.above = above;
    edges.below = below;
    c.fillStyle = hex(theme.muted);
    c.font = theme.font;
    c.textAlign = "right";
    c.textBaseline = "top";
    if (above) c.fillText(`▲ ${above}`, g.x1 - 4, 2);
    c.textBaseline = "bottom";
    if (below) c.fillText(`▼ ${below}`, g.x1 - 4, g.vh - 2);
  }

  function draw(): void {
    const t0 = performance.now();
    const g = geometry();
    const s = st();
    viewport.style.height = `${g.vh}px`;
    body.style.height = `${g.rows * ROW}px`;
    const sm = stream();
    placeRows(colQ, poolQ, sideQ, sm.q_len, g.first, g.last, "query");
    placeRows(colK, poolK, sideK, sm.k_len, g.first, g.last, "key", focusWeights() ? keyW : null);
    syncSwatches();
    if (pairSelect) pairSelect.value = s.pair_filter;
    const c = sizeCanvas(canvas, g.width, g.vh);
    if (c) {
      c.clearRect(0, 0, g.width, g.vh);
      collect(g, MAX_LINES);
      paintLines(c, g);
    }
    view.dataset.lines = String(lines.n);
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
  const rowOf = (e: Event): { side: "query" | "key"; i: number } | null => {
    const t = (e.target as HTMLElement | null)?.closest?.("[data-i]") as HTMLElement | null;
    const col = t?.parentElement as HTMLElement | null;
    if (!t || !col?.dataset.side) return null;
    return { side: col.dataset.side as "query" | "key", i: Number(t.dataset.i) };
  };
  for (const col of [colQ, colK]) {
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
  L.on(swatches, "click", (e) => {
    const b = (e.target as HTMLElement).closest?.("[data-head]") as HTMLElement | null;
    if (!b) return;
    const hd = Number(b.dataset.head);
    const cur = st().heads;
    let next = cur.includes(hd) ? cur.filter((x) => x !== hd) : [...cur, hd].sort((a, b2) => a - b2);
    if (!next.length) next = Array.from({ length: stream().num_heads }, (_, i) => i);
    store.set({ heads: next });
  });
  L.on(swatches, "dblclick", (e) => {
    const b = (e.target as HTMLElement).closest?.("[data-head]") as HTMLElement | null;
    if (!b) return;
    const hd = Number(b.dataset.head);
    store.set({ heads: [hd], head: hd });
  });

  bar.append(swatches);
  const unSave = saveButtons(bar, {
    name: () => `attnscope-head-L${st().layer}`,
    png: () => composePng(),
    svg: () => composeSvg(),
  });

  function labelsInView(g: ReturnType<typeof geometry>): { side: Side; i: number; x: number; align: "left" | "right"; y: number }[] {
    const out: { side: Side; i: number; x: number; align: "left" | "right"; y: number }[] = [];
    const top = viewport.scrollTop;
    const sm = stream();
    for (let i = Math.max(0, Math.floor(top / ROW)); i <= Math.min(g.rows - 1, Math.ceil((top + g.vh) / ROW)); i++) {
      const y = i * ROW + ROW / 2 - top;
      if (i < sm.q_len) out.push({ side: sideQ, i, x: COL_W - 6, align: "right", y });
      if (i < sm.k_len) out.push({ side: sideK, i, x: g.width - COL_W + 6, align: "left", y });
    }
    return out;
  }

  function composePng(): HTMLCanvasElement | null {
    const g = geometry();
    const out = document.createElement("canvas");
    const c = sizeCanvas(out, g.width, g.vh, 2);
    if (!c) return null;
    c.fillStyle = hex(theme.bg);
    c.fillRect(0, 0, g.width, g.vh);
    collect(g, MAX_LINES);
    paintLines(c, g);
    c.font = theme.font;
    c.textBaseline = "middle";
    for (const l of labelsInView(g)) {
      c.fillStyle = l.side.kinds[l.i] === "token" ? hex(theme.fg) : hex(theme.muted);
      c.textAlign = l.align;
      c.fillText(l.side.labels[l.i] ?? "", l.x, l.y);
    }
    return out;
  }

  function composeSvg(): string | null {
    const g = geometry();
    collect(g, MAX_LINES);
    const idx = Array.from({ length: lines.n }, (_, i) => i).sort((a, b) => (lines.w[b] as number) - (lines.w[a] as number)).slice(0, SVG_LINES);
    const parts: string[] = [];
    for (const i of idx) {
      parts.push(`<line x1="${g.x0}" y1="${(lines.yq[i] as number).toFixed(1)}" x2="${g.x1}" y2="${(lines.yk[i] as number).toFixed(1)}" stroke="${colors[lines.head[i] as number] ?? "#888"}" stroke-opacity="${Math.max(0.03, lines.w[i] as number).toFixed(3)}" stroke-width="1.5"/>`);
    }
    for (const l of labelsInView(g)) {
      const fill = l.side.kinds[l.i] === "token" ? hex(theme.fg) : hex(theme.muted);
      parts.push(`<text x="${l.x}" y="${l.y.toFixed(1)}" font-family="sans-serif" font-size="11" dominant-baseline="middle" text-anchor="${l.align === "right" ? "end" : "start"}" fill="${fill}">${xmlEscape(l.side.labels[l.i] ?? "")}</text>`);
    }
    return svgDocument(g.width, g.vh, hex(theme.bg), parts);
  }

  function rebuildStream(): void {
    sideQ = querySide(meta, stream());
    sideK = keySide(meta, stream());
    for (const d of [...poolQ.splice(0), ...poolK.splice(0)]) d.remove();
    buildSwatches();
    buildPairFilter();
  }

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      theme = readTheme(root, st().resolved_theme === "dark");
      buildSwatches();
    }
    if (changed.has("stream")) rebuildStream();
    if (changed.has("stream") || changed.has("layer")) load();
    if (changed.has("query") || changed.has("key")) reveal(changed.has("query") ? st().query : st().key);
    sched.request();
  });
  /** Scroll a selected row into view (keyboard moves the query past the edge). */
  function reveal(i: number | null): void {
    if (i == null) return;
    const vh = geometry().vh, top = viewport.scrollTop, y = i * ROW;
    if (y < top) viewport.scrollTop = y;
    else if (y + ROW > top + vh) viewport.scrollTop = y + ROW - vh;
  }
  const unResize = watchResize(viewport, () => sched.request());

  rebuildStream();
  load();

  return () => {
    sched.cancel();
    unsub();
    unResize();
    unSave();
    L.clear();
    view.remove();
  };
}
