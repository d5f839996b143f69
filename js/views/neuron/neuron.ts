// Neuron view: why a weight is what it is. For one layer, head and query token:
// q, every k, q×k per dimension, q·k, scale, bias/softcap/sink, and the softmax weight.
// The numbers are in neuron_rows.ts, the drawing in neuron_paint.ts; this file
// keeps the rows (DOM, virtualised) in step with the store and the chunks.
import { readTheme, type ThemeColors } from "../../colors";
import { attnKey, qkKey } from "../../chunk_keys";
import { chunkWords } from "../../chunk_words";
import { arr } from "../../data";
import { saveButtons } from "../../export_image";
import { imageLabel, isolate, joinParts, labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import { defaultQuery, keySide, querySide, streamOf, tokenClasses, type Side } from "../../tokens";
import type { AppState, Chunk, Cleanup, ViewContext } from "../../types";
import { fmt, fmtWeight, h, listeners, markDrawn, scheduler, setStatus, sizeCanvas } from "../common";
import { headPicker, syncHeadPicker } from "./neuron_controls";
import { cellW, NROW, paintStrip, rowsPicture, STRIP_H } from "./neuron_paint";
import { barFrac, neuronRows, type NeuronRows } from "./neuron_rows";

const MAX_VIEW_H = 520;
const OVERSCAN = 4;

interface RowEls { row: HTMLDivElement; label: HTMLSpanElement; tok: HTMLSpanElement; kc: HTMLCanvasElement; pc: HTMLCanvasElement; qk: HTMLSpanElement; bias: HTMLSpanElement; score: HTMLSpanElement; bar: HTMLSpanElement; w: HTMLSpanElement }

export function renderNeuronView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-neuronview", { "data-testid": "neuron-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const status = h("div", "attnscope-status");
  const info = h("div", "attnscope-nv-info", { "data-testid": "neuron-info" });
  const qline = h("div", "attnscope-nv-q");
  const qlabel = h("span", "attnscope-nv-label");
  const qcanvas = h("canvas", "attnscope-nv-strip", { "data-testid": "neuron-q", "aria-label": "query vector, one cell per dimension" });
  const readout = h("span", "attnscope-nv-readout", { "aria-live": "polite" });
  qline.append(qlabel, qcanvas, readout);
  const head = h("div", "attnscope-nv-row attnscope-nv-head");
  const headCells = (["key", "k", "q × k", "q · k", "bias", "score", "weight"] as const).map((t, i) => {
    const s = h("span", i >= 3 && i <= 5 ? "attnscope-nv-num" : i === 6 ? "attnscope-nv-wcell" : i > 0 ? "attnscope-nv-strip" : "");
    s.textContent = t;
    head.append(s);
    return s;
  });
  const viewport = h("div", "attnscope-nv-viewport", { "data-testid": "neuron-viewport" });
  const body = h("div", "attnscope-nv-body");
  viewport.append(body);
  const sortSel = h("select", "attnscope-select", { "aria-label": "Sort keys", "data-testid": "neuron-sort" });
  for (const [v, t] of [["position", "by position"], ["weight", "by weight"]]) {
    const o = h("option", "", { value: v as string });
    o.textContent = t as string;
    sortSel.append(o);
  }
  const queryIn = h("input", "attnscope-input", { type: "number", min: "0", step: "1", "aria-label": "Query token index", "data-testid": "neuron-query", title: "Type an index and press Enter, or click a token in the list" });
  const queryLab = h("label", "attnscope-hint");
  queryLab.append("query #", queryIn);
  /** Heads of the current layer whose q and k an exported page left out (`_meta` says which). */
  const missingHeads = (): readonly number[] => streamOf(meta, store.get().stream).qk_missing?.[store.get().layer] ?? [];
  const headSel = headPicker(L, store, () => streamOf(meta, store.get().stream).num_heads, missingHeads);
  bar.append(headSel, queryLab, sortSel);
  view.append(bar, status, info, qline, head, viewport);
  root.append(view);

  const st = (): AppState => store.get();
  const stream = () => streamOf(meta, st().stream);
  let theme: ThemeColors = readTheme(root, st().resolved_theme === "dark");
  let chunk: Chunk | null = null;
  let chunkKey = "";
  /** The same head's `attn:` chunk: the weights the model returned, to check softmax(score) against. */
  let recordedKey = "";
  let rows: NeuronRows | null = null;
  let rowsFor = "";
  let order: Uint32Array = new Uint32Array(0);
  let hoverDim = -1;
  const pool: RowEls[] = [];
  let sideQ: Side = querySide(meta, stream());
  let sideK: Side = keySide(meta, stream());

  const reason = (): string | null => {
    if (meta.neuron_unavailable) return meta.neuron_unavailable;
    if (stream().head_dim == null) return "This trace has no q/k vectors for this stream (head_dim is null), so the neuron view cannot be shown.";
    return null;
  };
  const sameSides = (): boolean => stream().query_side === stream().key_side;
  const queryIdx = (): number => {
    const q = st().query;
    return q != null && q >= 0 && q < stream().q_len ? q : defaultQuery(sideQ);
  };
  /** A strip on its own small canvas, the hovered dimension outlined. */
  function strip(c: HTMLCanvasElement, values: (d: number) => number, D: number, max: number): void {
    const dpr = window.devicePixelRatio || 1;
    const ctx2 = sizeCanvas(c, D * cellW(D), STRIP_H, dpr);
    if (ctx2) paintStrip(canvasPainter(ctx2, theme.font, dpr), 0, 0, D, values, max, theme, hoverDim);
  }

  function computeRows(): void {
    const recorded = data.peek(recordedKey);
    const key = `${chunkKey}|${queryIdx()}|${sortSel.value}|${recorded ? 1 : 0}`;
    if (key === rowsFor || !chunk || chunk.error) return;
    rowsFor = key;
    rows = neuronRows(chunk, queryIdx(), recorded);
    const r = rows;
    order = Uint32Array.from({ length: r.K }, (_, i) => i);
    if (sortSel.value === "weight") order.sort((a, b) => (r.weight[b] as number) - (r.weight[a] as number) || a - b);
  }

  function fillRow(el: RowEls, j: number, r: NeuronRows, sel: number | null): void {
    const D = r.D;
    const k = arr(chunk as Chunk, "k").data as Float32Array;
    el.row.dataset.key = String(j);
    el.row.dataset.qk = String(r.qk[j]);
    el.row.dataset.weight = String(r.weight[j]);
    el.row.className = `attnscope-nv-row${r.masked[j] ? " is-masked" : ""}${sel === j ? " is-selected" : ""}`;
    el.row.setAttribute("aria-selected", sel === j ? "true" : "false");
    el.label.className = tokenClasses(sideK, j);
    el.tok.replaceChildren(labelElement(sideK.labels[j] ?? String(j)));
    el.label.title = `${isolate(sideK.raw[j] ?? "")} (#${j})${sameSides() ? " — click to make it the query" : ""}`;
    strip(el.kc, (d) => k[j * D + d] as number, D, r.maxQK);
    strip(el.pc, (d) => (r.q[d] as number) * (k[j * D + d] as number), D, r.maxProd);
    el.qk.textContent = fmt(r.qk[j] as number);
    el.bias.hidden = !r.bias;
    if (r.bias) el.bias.textContent = fmt(r.bias[j] as number);
    el.score.textContent = r.masked[j] ? "masked" : fmt(r.score[j] as number);
    const w = r.weight[j] as number;
    el.bar.style.width = `${(barFrac(w, r) * 80).toFixed(1)}px`;
    el.w.textContent = fmtWeight(w);
  }

  function newRow(): RowEls {
    const row = h("div", "attnscope-nv-row", { role: "option" });
    const label = h("span");
    const tok = h("span", "attnscope-nv-keytok");
    label.append(tok);
    const kc = h("canvas", "attnscope-nv-strip");
    const pc = h("canvas", "attnscope-nv-strip");
    const qk = h("span", "attnscope-nv-num");
    const bias = h("span", "attnscope-nv-num");
    const score = h("span", "attnscope-nv-num");
    const wcell = h("span", "attnscope-nv-wcell");
    const barEl = h("span", "attnscope-nv-bar");
    const w = h("span", "attnscope-nv-num");
    wcell.append(w, barEl);
    row.append(label, kc, pc, qk, bias, score, wcell);
    body.append(row);
    return { row, label, tok, kc, pc, qk, bias, score, bar: barEl, w };
  }

  function writeInfo(r: NeuronRows): void {
    const s = st();
    const sm = stream();
    const parts = [
      `layer ${sm.layers[s.layer] ?? s.layer}`,
      `head ${s.head}${r.kvHead >= 0 && r.kvHead !== s.head ? ` (kv head ${r.kvHead})` : ""}`,
      [`query “`, labelElement(sideQ.labels[queryIdx()] ?? ""), `” (#${queryIdx()})`],
      `score = q·k × ${fmt(r.scaling)}${r.bias ? " + bias" : ""}${r.softcap ? `, softcap ${fmt(r.softcap)}·tanh(·/${fmt(r.softcap)})` : ""}`,
      `weight = softmax(score)${r.sink != null ? ` with sink ${fmt(r.sink)}` : ""}`,
      // What a full bar means, written out.
      `bars: weight ÷ row max (row max = ${fmt(r.maxWeight)})`,
      // Honest about the explanation: how far softmax(score) is from the weights the model returned.
      Number.isNaN(r.recomputeError) ? "checking against the recorded weights…"
        : r.recomputeError <= r.recordedTolerance ? "matches the model's own weights"
          : `⚠ softmax(score) differs from the model's own weights by up to ${fmt(r.recomputeError)}`,
    ];
    info.replaceChildren(...joinParts(parts, " · "));
    // The detail, for who wants it: the recorded weights travel at one byte each.
    info.title = Number.isNaN(r.recomputeError) ? ""
      : r.checkedBy === "rowmax" ? `this row's largest weight differs from the model's by ${fmt(r.recomputeError)}; q and k are saved as float16, so up to ${fmt(r.recordedTolerance)} is rounding`
        : `largest |softmax(score) − recorded weight| = ${fmt(r.recomputeError)}; the recorded weights are sent at 8 bits, so up to ${fmt(r.recordedTolerance)} is rounding`;
    info.dataset.recomputeError = String(r.recomputeError);
    qlabel.textContent = `q · ${sideQ.labels[queryIdx()] ?? ""}`;
    const sw = `${r.D * cellW(r.D)}px`;
    (headCells[1] as HTMLElement).style.width = sw;
    (headCells[2] as HTMLElement).style.width = sw;
    (headCells[4] as HTMLElement).hidden = !r.bias;
    queryIn.max = String(stream().q_len - 1);
    if ((queryIn.getRootNode() as Document | ShadowRoot).activeElement !== queryIn) queryIn.value = String(queryIdx());
    strip(qcanvas, (d) => r.q[d] as number, r.D, r.maxQK);
  }

  function draw(): void {
    const why = reason();
    if (why) {
      setStatus(status, why, "info");
      info.hidden = qline.hidden = head.hidden = viewport.hidden = bar.hidden = true;
      markDrawn(view, true);
      return;
    }
    syncHeadPicker(headSel, stream().num_heads, st().head, missingHeads());
    computeRows();
    const r = rows;
    const ok = !!r && !!chunk && !chunk.error;
    info.hidden = qline.hidden = head.hidden = viewport.hidden = !ok;
    if (!ok || !r) { markDrawn(view, false); return; }
    writeInfo(r);
    const vh = Math.min(r.K * NROW, MAX_VIEW_H);
    viewport.style.height = `${vh}px`;
    body.style.height = `${r.K * NROW}px`;
    const top = viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / NROW) - OVERSCAN);
    const last = Math.min(r.K - 1, Math.ceil((top + vh) / NROW) + OVERSCAN);
    const count = Math.max(0, last - first + 1);
    while (pool.length < count) pool.push(newRow());
    const sel = st().key;
    for (let p = 0; p < pool.length; p++) {
      const el = pool[p] as RowEls;
      if (p >= count) { el.row.hidden = true; continue; }
      el.row.hidden = false;
      el.row.style.top = `${(first + p) * NROW}px`;
      fillRow(el, order[first + p] as number, r, sel);
    }
    markDrawn(view, true);
  }
  const sched = scheduler(draw);

  function load(): void {
    if (reason()) { sched.request(); return; }
    const s = st();
    const key = qkKey(s.stream, s.layer, s.head);
    if (key === chunkKey && chunk) return;
    chunkKey = key;
    recordedKey = attnKey(s.stream, s.layer, s.head);
    rowsFor = "";
    rows = null;
    chunk = data.peek(key) ?? null;
    if (!chunk) { setStatus(status, "Loading q and k…"); view.dataset.ready = "false"; }
    data.request([key]).then((m) => {
      if (key !== chunkKey) return;
      chunk = m.get(key) ?? { key, arrays: {}, error: "missing" };
      setStatus(status, chunk.error ? `Could not load ${chunkWords(key, meta)}: ${chunk.error}` : null, chunk.error ? "error" : "info");
      sched.request();
      const H = stream().num_heads;
      const next = [s.head + 1, s.head - 1].filter((x) => x >= 0 && x < H).map((x) => qkKey(s.stream, s.layer, x));
      if (next.length) void data.request(next);
    }).catch(() => undefined);
    // A page's q/k that carry the row maxima are checked against those, not against `attn:`.
    void data.request([key]).then((m) => m.get(key)?.arrays.rowmax ? null : data.request([recordedKey]))
      .then((m) => { if (m && key === chunkKey) sched.request(); }).catch(() => undefined);
    sched.request();
  }

  const dimAt = (e: MouseEvent, c: HTMLCanvasElement): number => {
    if (!rows) return -1;
    const x = e.clientX - c.getBoundingClientRect().left;
    const d = Math.floor(x / cellW(rows.D));
    return d >= 0 && d < rows.D ? d : -1;
  };
  const onMove = (e: MouseEvent): void => {
    const t = e.target as HTMLElement;
    if (!(t instanceof HTMLCanvasElement) || !t.classList.contains("attnscope-nv-strip") || !rows) return;
    const d = dimAt(e, t);
    if (d === hoverDim) return;
    hoverDim = d;
    const rowEl = t.closest("[data-key]") as HTMLElement | null;
    const j = rowEl ? Number(rowEl.dataset.key) : -1;
    const kd = j >= 0 && chunk ? (arr(chunk, "k").data[j * rows.D + d] as number) : NaN;
    readout.textContent = d < 0 ? "" : `dim ${d}: q=${fmt(rows.q[d] as number)}${j >= 0 ? `, k=${fmt(kd)}, q×k=${fmt((rows.q[d] as number) * kd)}` : ""}`;
    view.dataset.hoverDim = String(d);
    sched.request();
  };
  L.on<MouseEvent>(view, "mousemove", onMove);
  L.on(viewport, "mouseleave", () => { if (hoverDim >= 0) { hoverDim = -1; readout.textContent = ""; delete view.dataset.hoverDim; sched.request(); } });
  L.on(viewport, "scroll", () => sched.request(), { passive: true });
  L.on(body, "click", (e) => {
    const t = e.target as HTMLElement;
    const r = t.closest?.("[data-key]") as HTMLElement | null;
    if (!r) return;
    const j = Number(r.dataset.key);
    // A key's token is also a query when both sides are the same tokens: its label makes it the query.
    if (t.closest?.(".attnscope-nv-keytok") && sameSides()) store.set({ query: j, key: null });
    else store.set({ key: j });
  });
  L.on(sortSel, "change", () => { rowsFor = ""; sched.request(); });
  const applyQuery = (): void => {
    const v = Math.round(Number(queryIn.value));
    if (queryIn.value !== "" && Number.isFinite(v) && v >= 0 && v < stream().q_len) store.set({ query: v });
  };
  L.on(queryIn, "change", applyQuery);
  // Enter applies at once; JupyterLab's own key handling keeps "change" from firing until the box loses focus.
  L.on<KeyboardEvent>(queryIn, "keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    e.stopPropagation();
    applyQuery();
  });

  /** The keys whose rows are visible now: an export shows what the reader sees. */
  function visibleKeys(): number[] {
    if (!rows) return [];
    const top = viewport.scrollTop;
    const vh = Math.min(rows.K * NROW, MAX_VIEW_H);
    const out: number[] = [];
    for (let p = Math.floor(top / NROW); p < Math.min(rows.K, Math.ceil((top + vh) / NROW)); p++) out.push(order[p] as number);
    return out;
  }

  const unSave = saveButtons(bar, {
    name: () => `attnscope-neuron-L${st().layer}-H${st().head}`,
    caption: () => {
      const s = st(), r = rows;
      const kv = r && r.kvHead >= 0 && r.kvHead !== s.head ? ` (kv head ${r.kvHead})` : "";
      const score = r ? `score = q·k × ${fmt(r.scaling)}${r.bias ? " + bias" : ""}${r.softcap ? `, softcap ${fmt(r.softcap)}` : ""}` : "";
      return [
        `${meta.title ?? "attnscope"} · neuron view · layer ${stream().layers[s.layer] ?? s.layer} · head ${s.head}${kv}`,
        `query “${imageLabel((sideQ.labels[queryIdx()] ?? "").trim())}” (#${queryIdx()}) · ${score} · weight = softmax(score)${r?.sink != null ? " with a sink" : ""}`,
        `keys: the ${visibleKeys().length} rows in view of ${r?.K ?? 0}, ${sortSel.value === "weight" ? "strongest first" : "in order"}`,
      ];
    },
    picture: () => (rows && chunk && !chunk.error ? rowsPicture({
      rows,
      k: arr(chunk, "k").data as Float32Array,
      keys: visibleKeys(),
      queryLabel: sideQ.labels[queryIdx()] ?? "",
      keyLabel: (j) => sideK.labels[j] ?? String(j),
      theme,
    }) : null),
  });

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) theme = readTheme(root, st().resolved_theme === "dark");
    if (changed.has("stream")) { sideQ = querySide(meta, stream()); sideK = keySide(meta, stream()); }
    if (changed.has("stream") || changed.has("layer") || changed.has("head")) load();
    sched.request();
  });
  load();

  return () => {
    sched.cancel();
    unsub();
    unSave();
    L.clear();
    view.remove();
  };
}
