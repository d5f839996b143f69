// The neuron view of a comparison's A − B: for one layer, head and query, each
// key's q·k and softmax weight in A and in B side by side, with their change, and
// for the selected key the per-dimension q×k of both inputs.
import { readTheme, rgba, type ThemeColors } from "../../colors";
import { attnKey, qkKey, sideKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import { arr } from "../../data";
import { isolate, joinParts, labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import { defaultQuery, keySide, querySide, streamOf, tokenClasses } from "../../tokens";
import type { Chunk, Cleanup, ViewContext } from "../../wire/types";
import { fmt, fmtWeight, h, listeners, markDrawn, scheduler, setStatus, sizeCanvas } from "../common";
import { signedColor } from "./compare_colors";
import { cellW, paintStrip, STRIP_H } from "../neuron/neuron_paint";
import { neuronRows, type NeuronRows } from "../neuron/neuron_rows";

/** Both inputs' numbers for one query row, and what the view shows of them. */
export interface SideBySide {
  a: NeuronRows;
  b: NeuronRows;
  /** The key whose q×k strips are shown: the selected one, else the one whose weight changed most. */
  key: number;
  /** Largest |weight A − weight B| over the keys, for the bars. */
  maxChange: number;
}

/** The side-by-side numbers of one query row, from each input's `qk:` (and `attn:`, to check against) chunks. */
export function sideBySide(qkA: Chunk, qkB: Chunk, query: number, selectedKey: number | null, attnA?: Chunk | null, attnB?: Chunk | null): SideBySide {
  const a = neuronRows(qkA, query, attnA), b = neuronRows(qkB, query, attnB);
  let maxChange = 0, most = 0;
  for (let j = 0; j < a.K; j++) {
    const d = Math.abs((a.weight[j] as number) - (b.weight[j] as number));
    if (d > maxChange) { maxChange = d; most = j; }
  }
  const key = selectedKey != null && selectedKey >= 0 && selectedKey < a.K ? selectedKey : most;
  return { a, b, key, maxChange };
}

const COLUMNS = ["key", "q·k A", "q·k B", "Δ q·k", "weight A", "weight B", "Δ weight"] as const;

export function renderCompareNeuron(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-neuronview attnscope-cmpneuron", { "data-testid": "compare-neuron-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const queryIn = h("input", "attnscope-input", { type: "number", min: "0", step: "1", "aria-label": "Query token index", "data-testid": "neuron-query" });
  const headIn = h("input", "attnscope-input", { type: "number", min: "0", step: "1", "aria-label": "Head", "data-testid": "neuron-head" });
  const queryLab = h("label", "attnscope-hint");
  queryLab.append("query #", queryIn);
  const headLab = h("label", "attnscope-hint");
  headLab.append("head ", headIn);
  bar.append(queryLab, headLab);
  const status = h("div", "attnscope-status");
  const info = h("div", "attnscope-nv-info", { "data-testid": "neuron-info" });
  const detail = h("div", "attnscope-cmp-detail", { "data-testid": "compare-detail" });
  const table = h("div", "attnscope-cmp-table", { role: "listbox", "aria-label": "Keys: q·k and weight in A and B" });
  view.append(bar, status, info, detail, table);
  root.append(view);

  const st = () => store.get();
  const stream = () => streamOf(meta, st().stream);
  let theme: ThemeColors = readTheme(root, st().resolved_theme === "dark");
  let loadedFor = "";
  let chunks: Record<string, Chunk | undefined> = {};
  const sides = () => ({ sideQ: querySide(meta, stream()), sideK: keySide(meta, stream()) });
  const queryIdx = (): number => {
    const q = st().query;
    return q != null && q >= 0 && q < stream().q_len ? q : defaultQuery(sides().sideQ);
  };
  const keysNow = () => {
    const s = st();
    return {
      qkA: sideKey("a", qkKey(s.stream, s.layer, s.head)), qkB: sideKey("b", qkKey(s.stream, s.layer, s.head)),
      attnA: sideKey("a", attnKey(s.stream, s.layer, s.head)), attnB: sideKey("b", attnKey(s.stream, s.layer, s.head)),
    };
  };

  function strips(r: SideBySide, D: number): void {
    detail.replaceChildren();
    const { sideK } = sides();
    const title = h("div", "attnscope-cmp-detail-title");
    title.replaceChildren("key “", labelElement(sideK.labels[r.key] ?? String(r.key)), `” (#${r.key}): q × k per dimension`);
    detail.append(title);
    const max = Math.max(r.a.maxProd, r.b.maxProd);
    for (const [name, rows] of [["A", r.a], ["B", r.b]] as const) {
      const line = h("div", "attnscope-nv-q");
      const label = h("span", "attnscope-nv-label");
      label.textContent = name;
      const c = h("canvas", "attnscope-nv-strip", { "data-testid": `compare-strip-${name.toLowerCase()}` });
      const dpr = window.devicePixelRatio || 1;
      const ctx2 = sizeCanvas(c, D * cellW(D), STRIP_H, dpr);
      const k = arr(chunks[name === "A" ? keysNow().qkA : keysNow().qkB] as Chunk, "k").data;
      if (ctx2) paintStrip(canvasPainter(ctx2, theme.font, dpr), 0, 0, D, (d) => (rows.q[d] as number) * (k[r.key * D + d] as number), max, theme);
      const note = h("span", "attnscope-nv-readout");
      note.textContent = `q·k = ${fmt(rows.qk[r.key] as number)} · weight ${fmtWeight(rows.weight[r.key] as number)}`;
      line.append(label, c, note);
      detail.append(line);
    }
  }

  function row(r: SideBySide, j: number, selected: boolean): HTMLElement {
    const { sideK } = sides();
    const el = h("div", `attnscope-nv-row${selected ? " is-selected" : ""}`, { role: "option", "data-key": String(j), "aria-selected": String(selected) });
    const wA = r.a.weight[j] as number, wB = r.b.weight[j] as number, change = wA - wB;
    el.dataset.change = String(change);
    const label = h("span", tokenClasses(sideK, j));
    label.replaceChildren(labelElement(sideK.labels[j] ?? String(j)));
    label.title = `${isolate(sideK.raw[j] ?? "")} (#${j})`;
    const qkA = r.a.qk[j] as number, qkB = r.b.qk[j] as number;
    const cells = [fmt(qkA), fmt(qkB), fmt(qkA - qkB), fmtWeight(wA), fmtWeight(wB), fmtWeight(change)].map((text) => {
      const s = h("span", "attnscope-nv-num");
      s.textContent = text;
      return s;
    });
    const barEl = h("span", "attnscope-nv-bar");
    const t = r.maxChange > 0 ? change / r.maxChange : 0;
    barEl.style.width = `${(Math.abs(t) * 60).toFixed(1)}px`;
    barEl.style.background = rgba(signedColor(t < 0 ? -1 : 1, theme), 1);
    el.append(label, ...cells, barEl);
    return el;
  }

  function draw(): void {
    const s = st();
    const k = keysNow();
    const qkA = chunks[k.qkA], qkB = chunks[k.qkB];
    const failed = [qkA, qkB].find((c) => c?.error);
    if (meta.neuron_unavailable || stream().head_dim == null) {
      setStatus(status, meta.neuron_unavailable ?? "This stream has no q/k vectors, so q·k cannot be shown.", "info");
      info.hidden = detail.hidden = table.hidden = true;
      markDrawn(view, true);
      return;
    }
    if (failed) setStatus(status, `Could not load ${chunkWords(failed.key, meta)}: ${failed.error}`, "error");
    if (!qkA || !qkB || failed) { markDrawn(view, false); return; }
    const q = queryIdx();
    const r = sideBySide(qkA, qkB, q, s.key, chunks[k.attnA], chunks[k.attnB]);
    const { sideQ } = sides();
    const sm = stream();
    const checked = [r.a, r.b].every((x) => x.recomputeError <= x.recordedTolerance);
    info.replaceChildren(...joinParts([
      `layer ${sm.layers[s.layer] ?? s.layer}`, `head ${s.head}`, ["query “", labelElement(sideQ.labels[q] ?? ""), `” (#${q})`],
      "q·k and weight = softmax(q·k × scale …) of each key in A and in B; Δ = A − B",
      ...(checked ? ["both match the recorded weights"] : []),
    ], " · "));
    strips(r, r.a.D);
    const head = h("div", "attnscope-nv-row attnscope-nv-head");
    for (const c of COLUMNS) {
      const span = h("span", c === "key" ? "" : "attnscope-nv-num");
      span.textContent = c;
      head.append(span);
    }
    table.replaceChildren(head, ...Array.from({ length: r.a.K }, (_, j) => row(r, j, j === r.key)));
    if ((queryIn.getRootNode() as Document | ShadowRoot).activeElement !== queryIn) queryIn.value = String(q);
    if ((headIn.getRootNode() as Document | ShadowRoot).activeElement !== headIn) headIn.value = String(s.head);
    queryIn.max = String(sm.q_len - 1);
    headIn.max = String(sm.num_heads - 1);
    view.dataset.shownKey = String(r.key);
    info.hidden = detail.hidden = table.hidden = false;
    markDrawn(view, true);
  }
  const sched = scheduler(draw);

  function load(): void {
    const k = keysNow();
    const want = Object.values(k);
    if (want.join() === loadedFor) return;
    loadedFor = want.join();
    chunks = Object.fromEntries(want.map((key) => [key, data.peek(key)]));
    if (!chunks[k.qkA] || !chunks[k.qkB]) setStatus(status, "Loading q and k of A and B…");
    data.request(want).then((got) => {
      if (loadedFor !== want.join()) return;
      for (const key of want) chunks[key] = got.get(key);
      if (!chunks[k.qkA]?.error && !chunks[k.qkB]?.error) setStatus(status, null);
      sched.request();
    }).catch(() => undefined);
    sched.request();
  }

  L.on(table, "click", (e) => {
    const r = (e.target as HTMLElement).closest?.("[data-key]") as HTMLElement | null;
    if (r) store.set({ key: Number(r.dataset.key) });
  });
  L.on(queryIn, "change", () => {
    const v = Math.round(Number(queryIn.value));
    if (Number.isFinite(v) && v >= 0 && v < stream().q_len) store.set({ query: v });
  });
  L.on(headIn, "change", () => {
    const v = Math.round(Number(headIn.value));
    if (Number.isFinite(v) && v >= 0 && v < stream().num_heads) store.set({ head: v });
  });

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) theme = readTheme(root, st().resolved_theme === "dark");
    if (changed.has("stream") || changed.has("layer") || changed.has("head")) load();
    sched.request();
  });
  load();

  return () => {
    sched.cancel();
    unsub();
    L.clear();
    view.remove();
  };
}
