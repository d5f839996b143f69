// The head view's segments mode: rows are sentences or turns (_meta.segments), a
// line from each query segment to each key segment per selected head, in the
// head's colour, its opacity the segment mass of the `segments:<stream>:<layer>`
// chunk. Labels are the segment's first words; hovering one shows its token range
// and text, and focuses its lines (a click keeps the focus). The numbers are
// segment_geometry.ts; head_draw.ts shows this panel in place of the token rows.
import { hex, type ThemeColors } from "../../colors";
import { segmentsKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import { isolate, labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import type { Picture } from "../../paint/painter";
import type { AppState, Chunk, DataSource, Meta, SegmentsMeta, Store } from "../../wire/types";
import { fmt, h, setStatus, sizeCanvas, type Listeners } from "../common";
import { SEGMENT_ROW, segmentLayout, type SegmentFocus } from "./segment_geometry";
import { paintSegmentLabels, paintSegmentLines, segmentCaption } from "./segment_paint";

export interface SegmentPanel {
  el: HTMLElement;
  /** Ask for the current layer's chunk (a layer or stream change). */
  load: () => void;
  /** Draw with these head colours; true once the chunk was there to draw. */
  draw: (width: number, colors: readonly string[], theme: ThemeColors) => boolean;
  /** What the panel shows, labels drawn, for a PNG or SVG; null before its chunk is in. */
  picture: (width: number, colors: readonly string[], theme: ThemeColors) => Picture | null;
  /** The exported picture's caption (model, layer, heads, what the rows are). */
  caption: () => string[];
}

/** Whether the head view offers segments for the shown stream. */
export const segmentsOf = (meta: Meta, stream: string): SegmentsMeta | null =>
  meta.segments && meta.segments.stream === stream ? meta.segments : null;

/** `status` is the head view's own status line: the panel says its loading and errors there. */
export function segmentPanel(meta: Meta, store: Store<AppState>, data: DataSource, L: Listeners, request: () => void, status: HTMLElement): SegmentPanel {
  const el = h("div", "attnscope-seg", { "data-testid": "segment-view" });
  const viewport = h("div", "attnscope-seg-viewport");
  const body = h("div", "attnscope-seg-body");
  const canvas = h("canvas", "attnscope-seg-canvas", { "aria-hidden": "true" });
  const colQ = h("div", "attnscope-seg-col attnscope-seg-q", { "data-side": "query", "aria-label": "Query segments" });
  const colK = h("div", "attnscope-seg-col attnscope-seg-k", { "data-side": "key", "aria-label": "Key segments" });
  body.append(canvas, colQ, colK);
  viewport.append(body);
  const legend = h("div", "attnscope-seg-legend", { "data-testid": "segment-legend" });
  el.append(legend, viewport);
  let chunk: Chunk | null = null;
  let wanted = "";
  let hover: SegmentFocus = null;
  let locked: SegmentFocus = null;
  let built = "";

  const segs = (): SegmentsMeta | null => segmentsOf(meta, store.get().stream);

  function load(): void {
    const s = store.get();
    // Only while rows are segments: a layer's chunk is heads x S^2 (image rows: up to 16 MiB).
    if (!segmentRows(meta, s)) return;
    const key = segmentsKey(s.stream, s.layer);
    if (key === wanted && chunk) return;
    wanted = key;
    chunk = data.peek(key) ?? null;
    if (chunk) { request(); return; }
    setStatus(status, `Loading the segments of layer ${meta.streams[s.stream]?.layers[s.layer] ?? s.layer}…`);
    data.request([key]).then((m) => {
      if (wanted !== key) return;
      chunk = m.get(key) ?? { key, arrays: {}, error: "missing" };
      setStatus(status, chunk.error ? `Could not load ${chunkWords(key, meta)}: ${chunk.error}` : null, chunk.error ? "error" : "info");
      request();
    }).catch(() => undefined);
  }

  /** One label per segment in each column, built once per segments meta. */
  function buildLabels(sm: SegmentsMeta): void {
    const sig = sm.edges.join(",");
    if (sig === built) return;
    built = sig;
    for (const [col, side] of [[colQ, "query"], [colK, "key"]] as const) {
      col.replaceChildren(...sm.labels.map((text, i) => {
        const row = h("div", "attnscope-seg-label", { "data-i": String(i), "data-side": side, title: isolate(sm.titles[i] ?? text) });
        row.style.top = `${i * SEGMENT_ROW}px`;
        row.append(labelElement(text));
        return row;
      }));
    }
  }

  const focus = (): SegmentFocus => hover ?? locked;
  const under = (e: Event): SegmentFocus => {
    const t = (e.target as HTMLElement | null)?.closest?.("[data-i]") as HTMLElement | null;
    return t?.dataset.side ? { side: t.dataset.side as "query" | "key", i: Number(t.dataset.i) } : null;
  };
  const same = (a: SegmentFocus, b: SegmentFocus): boolean => a?.side === b?.side && a?.i === b?.i;
  for (const col of [colQ, colK]) {
    L.on(col, "mouseover", (e) => { const f = under(e); if (f && !same(f, hover)) { hover = f; request(); } });
    L.on(col, "mouseleave", () => { if (hover) { hover = null; request(); } });
    L.on(col, "click", (e) => { const f = under(e); if (f) { locked = same(f, locked) ? null : f; request(); } });
  }

  function draw(width: number, colors: readonly string[], theme: ThemeColors): boolean {
    const sm = segs();
    if (!sm) return false;
    buildLabels(sm);
    const count = sm.labels.length;
    legend.textContent = legendText(sm);
    const g = segmentLayout(count, width);
    body.style.height = `${g.height}px`;
    colQ.style.width = colK.style.width = `${g.colW}px`;
    const f = focus();
    for (const col of [colQ, colK]) {
      for (const row of col.children) {
        const r = row as HTMLElement;
        const on = f !== null && f.side === r.dataset.side && f.i === Number(r.dataset.i);
        r.classList.toggle("is-selected", on && same(f, locked));
        r.classList.toggle("is-hover", on && !same(f, locked));
      }
    }
    const c = sizeCanvas(canvas, width, g.height);
    const values = massOf();
    el.dataset.segments = String(count);
    if (!c) return !!values;
    c.clearRect(0, 0, width, g.height);
    if (!values) { el.dataset.lines = "0"; return false; }
    // The lines, and the focused query segment's key bars behind each key label.
    const { lines, bars } = paintSegmentLines(canvasPainter(c, theme.font), g, values, count, store.get().heads, f, colors, theme);
    const tips = colK.children;
    for (let b = 0; b < count; b++) {
      const tip = tips[b] as HTMLElement | undefined;
      if (tip) tip.dataset.weight = bars ? fmt(bars[b] as number) : "";
    }
    el.dataset.lines = String(lines);
    return true;
  }

  const massOf = (): Float32Array | null => {
    const mass = chunk && !chunk.error ? chunk.arrays.mass : undefined;
    return mass ? (mass.data as Float32Array) : null;
  };

  function picture(width: number, colors: readonly string[], theme: ThemeColors): Picture | null {
    const sm = segs(), values = massOf();
    if (!sm || !values) return null;
    const g = segmentLayout(sm.labels.length, width), f = focus(), heads = store.get().heads;
    return {
      width, height: g.height, background: hex(theme.bg), font: theme.font,
      paint: (p) => {
        paintSegmentLines(p, g, values, sm.labels.length, heads, f, colors, theme);
        paintSegmentLabels(p, g, sm.labels, f, theme);
      },
    };
  }

  function caption(): string[] {
    const sm = segs(), s = store.get(), stream = meta.streams[s.stream];
    if (!sm || !stream) return [];
    const f = focus();
    return segmentCaption(meta.title ?? "", stream.layers[s.layer] ?? s.layer, s.heads, stream.num_heads, sm, f ? sm.labels[f.i] ?? null : null);
  }

  return { el, load, draw, picture, caption };
}

/** The panel's legend: how many rows, what they are, what a line's opacity is. */
function legendText(sm: SegmentsMeta): string {
  const count = sm.labels.length;
  if (sm.by === "images") {
    const images = sm.labels.filter((l) => /^img\d+ \(/.test(l)).length;
    return `${count} rows: ${images} ${images === 1 ? "image" : "images"} as one row each, every other token its own · a line's opacity: the mean over a row's query tokens of the weight summed over the other row's keys · hover a row to follow its lines, click to keep it; the hover text gives its tokens`;
  }
  const one = sm.by === "positions" ? "segment" : sm.by.replace(/s$/, "");
  return `${count} ${one}s · a line's opacity: the mean over a ${one}'s query tokens of the weight summed over the other ${one}'s keys (attnscope.segments(...).mass) · hover a ${one} to follow its lines, click to keep it; the hover text gives its tokens`;
}

/** The head view's switch between token rows and segment rows (shown when `_meta.segments` is of the stream). */
export function segmentToggle(meta: Meta, store: Store<AppState>, L: Listeners): { el: HTMLElement; sync: () => void } {
  const by = meta.segments?.by === "positions" ? "segments" : meta.segments?.by ?? "segments";
  const images = by === "images";
  const title = images
    ? "Each image one row (its tokens' attention summed), every other token its own row; unticked: every token a row"
    : `Rows are ${by} (lines: the mean over a ${by.replace(/s$/, "")}'s queries of the weight summed over each other's keys), or tokens`;
  const el = h("label", "attnscope-check attnscope-seg-toggle", { title });
  const input = h("input", "", { type: "checkbox", "data-testid": "toggle-segments" });
  el.append(input, document.createTextNode(images ? "collapse images" : by));
  L.on(input, "change", () => store.set({ segment_rows: input.checked }));
  const sync = (): void => {
    const s = store.get();
    el.hidden = !segmentsOf(meta, s.stream);
    input.checked = segmentRows(meta, s);
  };
  sync();
  return { el, sync };
}

/** Whether the head view shows segment rows now: the stream has segments and the reader has not switched to tokens. */
export const segmentRows = (meta: Meta, s: AppState): boolean => !!segmentsOf(meta, s.stream) && s.segment_rows !== false;
