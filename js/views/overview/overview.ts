// The overview: one head's (or the layer mean's) whole N × N as a zoomable map of
// tiles (docs/protocol.md, "Overview tiles"), inside the model view. Wheel or the
// buttons zoom, drag pans, a click opens the head view at that query (shift: the
// neuron view) with the clicked key selected; the search box finds a token and
// brings the map and the query there.
import { hex, readTheme, type ThemeColors } from "../../colors";
import { tileKey } from "../../chunk_keys";
import { keySide, querySide, streamOf } from "../../tokens";
import type { Chunk, Cleanup, ViewContext } from "../../types";
import { h, listeners, markDrawn, scheduler, setStatus, sizeCanvas, widthOf } from "../common";
import { tokenSearch } from "../head_search";
import { thumbLut } from "../model/model_grid";
import {
  centreOn, clampView, fitView, levelCount, parentOf, spanAt, TILE, tokenAt, visibleTiles, zoomAt,
  type OverviewView, type TilePlace,
} from "./overview_geometry";

const SIDE_MAX = 560;
/** Pixels a token takes before rows are labelled with their tokens. */
const LABEL_PX = 12;
/** Tile pictures kept (256 KB each). */
const MAX_IMAGES = 256;
/** Rows a search jump shows: close enough that each row is labelled with its token. */
const JUMP_ROWS = 40;

export function mountOverview(ctx: ViewContext, parent: HTMLElement): Cleanup {
  const { meta, store, data, root } = ctx;
  const L = listeners();
  const panel = h("div", "attnscope-ov", { "data-testid": "overview", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const title = h("span", "attnscope-hint");
  const headSel = h("select", "attnscope-select", { "aria-label": "Overview head", "data-testid": "overview-head" });
  const button = (label: string, tip: string, id: string): HTMLButtonElement => {
    const b = h("button", "attnscope-btn", { type: "button", title: tip, "aria-label": tip, "data-testid": id });
    b.textContent = label;
    return b;
  };
  const zoomIn = button("+", "Zoom in", "overview-zoom-in");
  const zoomOut = button("−", "Zoom out", "overview-zoom-out");
  const fit = button("whole", "Show the whole matrix", "overview-fit");
  const search = tokenSearch(L, () => labels(), () => store.get().query ?? -1, (row) => jump(row));
  search.querySelector("input")?.setAttribute("data-testid", "overview-search");
  search.querySelector("[data-testid=head-search-count]")?.setAttribute("data-testid", "overview-search-count");
  const where = h("span", "attnscope-hint", { "data-testid": "overview-where" });
  bar.append(title, headSel, zoomOut, zoomIn, fit, search, where);
  const status = h("div", "attnscope-status");
  const canvas = h("canvas", "attnscope-ov-canvas", { "data-testid": "overview-canvas", role: "img", "aria-label": "Overview of the whole attention matrix" });
  const legend = h("div", "attnscope-ov-legend attnscope-hint", { "data-testid": "overview-legend" });
  const ramp = h("canvas", "attnscope-ov-ramp");
  const [low, high] = [h("span"), h("span")];
  low.textContent = "weight 10⁻⁶";
  high.textContent = "1 (log scale; blank: a key the query cannot see)";
  legend.append(low, ramp, high);
  panel.append(bar, status, canvas, legend);
  parent.append(panel);

  const sm = () => streamOf(meta, store.get().stream);
  const labels = (): readonly string[] => querySide(meta, sm()).labels;
  let theme: ThemeColors = readTheme(root, store.get().resolved_theme === "dark");
  let lut = thumbLut(theme, "log");
  let side = 0;
  let view: OverviewView = { x0: 0, y0: 0, scale: 1 };
  let head: number | "mean" = store.get().head;
  /** Painted tiles by key; a key in `asked` is on its way (or failed: `failed` says why). */
  const images = new Map<string, HTMLCanvasElement>();
  const asked = new Set<string>();
  const failed = new Map<string, string>();

  function fillHeads(): void {
    headSel.replaceChildren();
    for (let i = 0; i < sm().num_heads; i++) {
      const o = h("option", "", { value: String(i) });
      o.textContent = `head ${i}`;
      headSel.append(o);
    }
    const o = h("option", "", { value: "mean" });
    o.textContent = "mean of heads";
    headSel.append(o);
    if (head !== "mean" && head >= sm().num_heads) head = 0;
    headSel.value = String(head);
  }
  L.on(headSel, "change", () => {
    head = headSel.value === "mean" ? "mean" : Number(headSel.value);
    if (head !== "mean") store.set({ head });
    sched.request();
  });

  const keyOf = (t: TilePlace): string => tileKey(store.get().stream, store.get().layer, head, t.level, t.row, t.col);

  function imageOf(chunk: Chunk): HTMLCanvasElement {
    const c = document.createElement("canvas");
    c.width = c.height = TILE;
    const g = c.getContext("2d");
    const bytes = chunk.arrays.tile?.data;
    if (g && bytes) {
      const img = g.createImageData(TILE, TILE);
      for (let i = 0; i < TILE * TILE; i++) img.data.set(lut.subarray((bytes[i] as number) * 4, (bytes[i] as number) * 4 + 4), i * 4);
      g.putImageData(img, 0, 0);
    }
    return c;
  }

  function ask(keys: string[]): void {
    const want = keys.filter((k) => !images.has(k) && !asked.has(k));
    if (!want.length) return;
    for (const k of want) asked.add(k);
    data.request(want).then((got) => {
      for (const k of want) {
        const c = got.get(k);
        if (!c) continue;
        if (c.error) failed.set(k, c.error);
        else images.set(k, imageOf(c));
        // A long session's zooming leaves many tiles behind: keep the latest few hundred.
        for (const old of images.keys()) { if (images.size <= MAX_IMAGES) break; images.delete(old); asked.delete(old); }
      }
      sched.request();
    }).catch(() => undefined);
  }

  /** The loaded tile that covers `t` best: itself or an ancestor, with the part of it `t` is. */
  function bestImage(t: TilePlace): { img: HTMLCanvasElement; sx: number; sy: number; sw: number } | null {
    let at: TilePlace | null = t, f = 1;
    while (at) {
      const img = images.get(keyOf(at));
      if (img) {
        const sw = TILE / f;
        return { img, sx: (t.col % f) * sw, sy: (t.row % f) * sw, sw };
      }
      at = parentOf(at);
      f *= 2;
    }
    return null;
  }

  function paint(): boolean {
    const s = sm();
    const width = Math.min(SIDE_MAX, Math.max(200, widthOf(panel) - 8));
    if (width !== side) { side = width; view = fitView(s.q_len, s.k_len, side, side); }
    const g = sizeCanvas(canvas, side, side);
    if (!g) return true;
    g.fillStyle = hex(theme.bg);
    g.fillRect(0, 0, side, side);
    g.imageSmoothingEnabled = false;
    const tiles = visibleTiles(s.q_len, s.k_len, view, side, side);
    const level = tiles[0]?.level ?? 0;
    ask([keyOf({ level: 0, row: 0, col: 0 }), ...tiles.map(keyOf)]); // the whole first: it stands in for the rest
    const px = (tok: number, o: number): number => (tok - o) * view.scale;
    g.save();
    g.beginPath();
    g.rect(px(0, view.x0), px(0, view.y0), s.k_len * view.scale, s.q_len * view.scale);
    g.clip();
    let exact = 0;
    for (const t of tiles) {
      const best = bestImage(t);
      if (!best) continue;
      if (best.sw === TILE) exact++;
      const cover = TILE * spanAt(s.q_len, s.k_len, t.level);
      g.drawImage(best.img, best.sx, best.sy, best.sw, best.sw, px(t.col * cover, view.x0), px(t.row * cover, view.y0), cover * view.scale, cover * view.scale);
    }
    g.restore();
    const st = store.get();
    g.strokeStyle = hex(theme.fg);
    g.globalAlpha = 0.7;
    if (st.query != null) g.strokeRect(0, px(st.query, view.y0), side, Math.max(1, view.scale));
    if (st.key != null) g.strokeRect(px(st.key, view.x0), 0, Math.max(1, view.scale), side);
    g.globalAlpha = 1;
    if (view.scale >= LABEL_PX) paintRowLabels(g, s.q_len);
    const first = Math.floor(view.y0), last = Math.min(s.q_len, Math.ceil(view.y0 + side / view.scale)) - 1;
    const keysFrom = Math.floor(view.x0), keysTo = Math.min(s.k_len, Math.ceil(view.x0 + side / view.scale)) - 1;
    const span = spanAt(s.q_len, s.k_len, level);
    where.textContent = `queries ${first}–${last}, keys ${keysFrom}–${keysTo} · level ${level + 1} of ${levelCount(s.q_len, s.k_len)}: a cell is ${span === 1 ? "one weight" : `${span} × ${span} tokens (its largest weight)`}`;
    Object.assign(panel.dataset, { level: String(level), firstRow: String(first), lastRow: String(last), y0: String(view.y0), x0: String(view.x0), scale: String(view.scale), tiles: `${exact}/${tiles.length}` });
    const errors = tiles.map((t) => failed.get(keyOf(t))).filter(Boolean);
    setStatus(status, errors.length ? `Could not load the overview of ${head === "mean" ? "the mean of heads" : `head ${head}`} here: ${errors[0] ?? ""}${exact ? "" : " (a coarser level is shown)"}` : null, errors.length ? "error" : "info");
    const done = exact === tiles.length || errors.length > 0;
    markDrawn(panel, done);
    return true;
  }
  const sched = scheduler(paint);

  /** Close in, each visible row's token at the left edge, on the background. */
  function paintRowLabels(g: CanvasRenderingContext2D, qLen: number): void {
    const names = labels();
    g.font = theme.font;
    g.textBaseline = "middle";
    for (let q = Math.max(0, Math.floor(view.y0)); q < Math.min(qLen, view.y0 + side / view.scale); q++) {
      const text = `${q} ${names[q] ?? ""}`.slice(0, 24);
      const y = (q + 0.5 - view.y0) * view.scale;
      g.fillStyle = hex(theme.bg);
      g.globalAlpha = 0.8;
      g.fillRect(0, y - 6, g.measureText(text).width + 6, 12);
      g.globalAlpha = 1;
      g.fillStyle = hex(theme.fg);
      g.fillText(text, 3, y);
    }
  }

  function paintRamp(): void {
    const g = sizeCanvas(ramp, 160, 10);
    if (!g) return;
    for (let x = 0; x < 160; x++) {
      const b = 1 + Math.round((x / 159) * 254);
      g.fillStyle = `rgb(${lut[b * 4] ?? 0},${lut[b * 4 + 1] ?? 0},${lut[b * 4 + 2] ?? 0})`;
      g.fillRect(x, 0, 1, 10);
    }
  }

  function say(): void {
    title.textContent = `Overview of layer ${sm().layers[store.get().layer] ?? store.get().layer} (log scale, 6 decades; click: open the head view there, shift-click: the neuron view)`;
  }

  function jump(row: number): void {
    const s = sm();
    view = centreOn(s.q_len, s.k_len, row, Math.max(0, row - JUMP_ROWS / 2), JUMP_ROWS, side, side);
    store.set({ query: row, queries: [] });
    sched.request();
  }

  const zoomBy = (f: number, px = side / 2, py = side / 2): void => {
    const s = sm();
    view = zoomAt(s.q_len, s.k_len, view, px, py, f, side, side);
    sched.request();
  };
  L.on(zoomIn, "click", () => zoomBy(2));
  L.on(zoomOut, "click", () => zoomBy(0.5));
  L.on(fit, "click", () => { view = fitView(sm().q_len, sm().k_len, side, side); sched.request(); });
  L.on<WheelEvent>(canvas, "wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoomBy(Math.exp(-e.deltaY * 0.002), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });

  L.on<MouseEvent>(canvas, "mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const s = sm();
    const { query, key } = tokenAt(s.q_len, s.k_len, view, e.clientX - r.left, e.clientY - r.top);
    const keyNames = keySide(meta, s).labels;
    canvas.title = `query ${query} “${labels()[query] ?? ""}” → key ${key} “${keyNames[key] ?? ""}”: click to open the head view here`;
  });
  let drag: { x: number; y: number; moved: boolean; from: OverviewView } | null = null;
  L.on<MouseEvent>(canvas, "mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, moved: false, from: view }; });
  L.on<MouseEvent>(window, "mousemove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    if (!drag.moved) return;
    const s = sm();
    view = clampView(s.q_len, s.k_len, { ...drag.from, x0: drag.from.x0 - dx / view.scale, y0: drag.from.y0 - dy / view.scale }, side, side);
    sched.request();
  });
  L.on<MouseEvent>(window, "mouseup", (e) => {
    const was = drag;
    drag = null;
    if (!was || was.moved || e.target !== canvas) return;
    const r = canvas.getBoundingClientRect();
    const s = sm();
    const { query, key } = tokenAt(s.q_len, s.k_len, view, e.clientX - r.left, e.clientY - r.top);
    const heads = head === "mean" ? {} : { head, heads: [head] };
    store.set({ ...heads, query, key, queries: [], view: e.shiftKey ? "neuron" : "head" });
  });

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      theme = readTheme(root, store.get().resolved_theme === "dark");
      lut = thumbLut(theme, "log");
      paintRamp();
      images.clear();
      asked.clear();
    }
    if (changed.has("stream")) { fillHeads(); side = 0; }
    if (changed.has("head") && store.get().head !== head && head !== "mean") { head = store.get().head; headSel.value = String(head); }
    if (changed.has("stream") || changed.has("layer")) say();
    sched.request();
  });
  fillHeads();
  paintRamp();
  say();
  sched.request();
  return () => {
    sched.cancel();
    unsub();
    L.clear();
    panel.remove();
  };
}
