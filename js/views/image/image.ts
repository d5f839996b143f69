// Image view: a vision-language model's attention drawn on its pictures. For the
// query (a text token: click one in the strip, or step through a generation), each
// image grid's heatmap over the picture (one head, the selected heads or the mean
// of all); hover a patch to see the text tokens that look at it most.
import { readTheme, type ThemeColors } from "../../colors";
import { imageKey, pixelsKey } from "../../chunk_keys";
import { chunkWords } from "../../chunk_words";
import { saveButtons } from "../../export_image";
import { generationClasses, generationOf } from "../../generation";
import { labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import { querySide, streamOf, tokenClasses } from "../../tokens";
import type { Chunk, Cleanup, ImagesMeta, NDArray, ViewContext } from "../../types";
import { fmt, h, listeners, markDrawn, scheduler, setStatus, sizeCanvas } from "../common";
import { hitTest, layoutPanels, queryWeights, topQueries, type Hit, type ImageRows } from "./image_geometry";
import { imagePicture } from "./image_paint";
import { stepControl } from "../head_step";

/** Text tokens a hovered patch names: the queries that weigh it most. */
const HOVER_TOP = 5;

/** How the heads are combined: the store's selected heads, every head's mean, or one head. */
type HeadChoice = "selected" | "mean" | number;

function rowsOf(chunk: Chunk | null): ImageRows | null {
  const w = chunk?.arrays.weight, m = chunk?.arrays.rowmax;
  if (!chunk || chunk.error || !w || !m) return null;
  return { weight: w.data as Uint8Array, rowmax: m.data as Float32Array, heads: w.shape[0] ?? 0, queries: w.shape[1] ?? 0, columns: w.shape[2] ?? 0 };
}

export function renderImageView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  const images = meta.images as ImagesMeta;
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-imageview", { "data-testid": "image-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const headSel = h("select", "attnscope-select", { "aria-label": "Heads of the heatmap", "data-testid": "image-heads" });
  const hint = h("span", "attnscope-hint");
  hint.textContent = "Click a token to make it the query; hover a patch to see which tokens look at it.";
  const scaleSel = h("select", "attnscope-select", { "aria-label": "Colour scale of the grids", "data-testid": "image-scale" });
  for (const [value, text] of [["grid", "scale: each grid"], ["shared", "scale: all grids"]] as const) {
    const o = h("option", "", { value });
    o.textContent = text;
    scaleSel.append(o);
  }
  bar.append(headSel, scaleSel, hint);
  const status = h("div", "attnscope-status");
  const info = h("div", "attnscope-iv-info", { "data-testid": "image-info", "aria-live": "polite" });
  const body = h("div", "attnscope-iv-body");
  const strip = h("div", "attnscope-iv-tokens", { role: "listbox", "aria-label": "Query token", "data-testid": "image-tokens" });
  const stage = h("div", "attnscope-iv-stage");
  const canvas = h("canvas", "attnscope-iv-canvas", { "data-testid": "image-canvas", role: "img", "aria-label": "Attention drawn on the image" });
  const hover = h("div", "attnscope-iv-hover", { "data-testid": "image-hover", "aria-live": "polite" });
  stage.append(canvas, hover);
  body.append(strip, stage);
  const sm = streamOf(meta, images.stream);
  const side = querySide(meta, sm);
  const g = generationOf(meta, images.stream);
  const step = g ? stepControl(L, store, g, () => side) : null;
  view.append(bar, ...(step ? [step.el] : []), status, info, body);
  root.append(view);
  const unsave = saveButtons(bar, {
    name: () => `attnscope-image-layer${sm.layers[store.get().layer] ?? store.get().layer}-query${query()}`,
    picture: () => picture(),
    caption: () => [info.textContent ?? ""],
  });

  let choice: HeadChoice = "selected";
  const fillHeads = (): void => {
    headSel.replaceChildren();
    const add = (value: string, text: string): void => { const o = h("option", "", { value }); o.textContent = text; headSel.append(o); };
    add("selected", "selected heads (head view)");
    add("mean", "mean of all heads");
    for (let i = 0; i < sm.num_heads; i++) add(String(i), `head ${i}`);
    headSel.value = String(choice);
  };
  L.on(headSel, "change", () => {
    choice = headSel.value === "selected" || headSel.value === "mean" ? headSel.value : Number(headSel.value);
    if (typeof choice === "number") store.set({ head: choice });
    draw.request();
  });
  const heads = (): number[] => {
    if (choice === "mean") return Array.from({ length: sm.num_heads }, (_, i) => i);
    if (typeof choice === "number") return [choice];
    return store.get().heads.filter((x) => x >= 0 && x < sm.num_heads);
  };
  const headWords = (): string => {
    const hs = heads();
    if (typeof choice === "number") return `head ${choice}`;
    return hs.length === sm.num_heads ? `mean of all ${hs.length} heads` : `mean of heads ${hs.join(", ")}`;
  };

  /** The query: the store's when it shows no image, else the last text token. */
  const query = (): number => {
    const q = store.get().query;
    return q != null && images.queries.includes(q) ? q : (images.queries[images.queries.length - 1] ?? 0);
  };

  const firstImageToken = Math.min(...images.images.flatMap((im) => im.grids.flatMap((gr) => gr.positions)));
  let theme: ThemeColors = readTheme(root, store.get().resolved_theme === "dark");
  const layout = layoutPanels(images);
  const pixelKey = pixelsKey(images.stream);
  let pixels: (NDArray | null)[] = images.images.map(() => null);
  let chunk: Chunk | null = null;
  let chunkKey = "";
  let hit: Hit | null = null;

  const weights = (): Float32Array | null => {
    const d = rowsOf(chunk);
    const r = images.queries.indexOf(query());
    return d && r >= 0 ? queryWeights(d, heads(), r) : null;
  };
  const picture = () => imagePicture({ layout, pixels, weights: weights(), theme, hover: hit, shared: scaleSel.value === "shared" });
  L.on(scaleSel, "change", () => draw.request());

  function buildStrip(): void {
    strip.replaceChildren();
    if (images.left_out) {
      const note = h("span", "attnscope-hint", { "data-testid": "image-left-out" });
      note.textContent = `… ${images.left_out} earlier text tokens not offered (a layer's weights over the image are capped at 32 MB)`;
      strip.append(note);
    }
    for (const q of images.queries) {
      const b = h("button", "", { type: "button", role: "option", "data-query": String(q), title: `${side.raw[q] ?? ""} (#${q}): click to make it the query` });
      b.append(labelElement(side.labels[q] ?? String(q)));
      strip.append(b);
    }
  }
  function syncStrip(shares: Float32Array | null): void {
    const q = query(), s = store.get();
    strip.querySelectorAll<HTMLButtonElement>("button[data-query]").forEach((b, i) => {
      const at = Number(b.dataset.query);
      b.className = `${tokenClasses(side, at)}${generationClasses(g, s.step, at)}${at === q ? " is-selected" : ""}`;
      b.setAttribute("aria-selected", at === q ? "true" : "false");
      const share = shares?.[i];
      b.style.setProperty("--share", share == null ? "0" : String(Math.min(1, share)));
      b.dataset.share = share == null ? "" : String(share);
    });
  }
  L.on<MouseEvent>(strip, "click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLElement>("[data-query]");
    if (b) store.set({ query: Number(b.dataset.query), queries: [] });
  });

  /** Each text token's share of its attention that lands on the images (selected heads). */
  function shares(): Float32Array | null {
    const d = rowsOf(chunk);
    if (!d) return null;
    const out = new Float32Array(d.queries), hs = heads();
    for (let r = 0; r < d.queries; r++) { let s = 0; const w = queryWeights(d, hs, r); for (const v of w) s += v; out[r] = s; }
    return out;
  }

  function writeHover(): void {
    const d = rowsOf(chunk);
    if (!hit || !d) { hover.replaceChildren(hit ? "" : "Hover a patch to see which text tokens attend to it most."); hover.dataset.tokens = ""; return; }
    const { panel, row, col, column } = hit;
    // Words, not the markers a processor puts around images, when any word looks at the patch.
    const ranked = topQueries(d, heads(), column, d.queries);
    const words = ranked.filter((e) => side.kinds[images.queries[e.row] ?? 0] === "token");
    const top = (words.length ? words : ranked).slice(0, HOVER_TOP);
    const parts: (string | Node)[] = [`img${panel.image} r${row}c${col}${panel.grid ? ` (${panel.title.split(" · ")[1] ?? ""})` : ""}: `];
    if (!top.length) parts.push("no text token attends to it");
    else parts.push("most attended by ");
    top.forEach((e, i) => {
      const at = images.queries[e.row] ?? 0;
      parts.push(...(i ? [", "] : []), "\u201C", labelElement(side.labels[at] ?? ""), `\u201D ${fmt(e.weight)}`);
    });
    hover.replaceChildren(...parts);
    hover.dataset.tokens = top.map((e) => images.queries[e.row]).join(",");
  }

  function writeInfo(): void {
    const q = query(), w = weights(), s = store.get();
    const layerNo = sm.layers[s.layer] ?? s.layer;
    let total = 0;
    if (w) for (const v of w) total += v;
    const pics = images.images.length > 1 ? "images" : "image";
    const before = q < firstImageToken && total === 0 ? ` (it comes before the ${pics}: a causal model's token sees only earlier ones)` : "";
    const share = w ? ` · ${(total * 100).toFixed(total < 0.01 ? 2 : 1)}% of its attention on the ${pics}${before}` : "";
    info.replaceChildren(`layer ${layerNo} · ${headWords()} · query `, "\u201C", labelElement(side.labels[q] ?? ""), `\u201D (#${q})${share}`);
    const stale = s.query != null && !images.queries.includes(s.query);
    if (stale) info.append(` (token #${s.query} is an image token: the last text token is shown)`);
  }

  function paint(): boolean {
    const dpr = window.devicePixelRatio || 1;
    const pic = picture();
    const c2 = sizeCanvas(canvas, pic.width, pic.height, dpr);
    if (c2) {
      const p = canvasPainter(c2, pic.font, dpr);
      p.rect(0, 0, pic.width, pic.height, pic.background);
      pic.paint(p);
    }
    syncStrip(shares());
    writeInfo();
    writeHover();
    step?.sync();
    view.dataset.query = String(query());
    // Where each grid is drawn (CSS px in the canvas: x, y, w, h, rows, cols), for tests and tools.
    canvas.dataset.panels = JSON.stringify(layout.panels.map((q) => [q.x, q.y, q.w, q.h, q.rows, q.cols]));
    view.dataset.layer = String(store.get().layer);
    markDrawn(view, !!rowsOf(chunk) && pixels.every(Boolean));
    return true;
  }
  const draw = scheduler(paint);

  function load(): void {
    const key = imageKey(images.stream, store.get().layer);
    if (key === chunkKey) return;
    chunkKey = key;
    chunk = data.peek(key) ?? null;
    if (!chunk) setStatus(status, "Loading the image view's weights…");
    data.request([key]).then((got) => {
      if (key !== chunkKey) return;
      chunk = got.get(key) ?? { key, arrays: {}, error: "missing" };
      setStatus(status, chunk.error ? `Could not load ${chunkWords(key, meta)}: ${chunk.error}` : null, chunk.error ? "error" : "info");
      draw.request();
    }).catch(() => undefined);
  }
  data.request([pixelKey]).then((got) => {
    const c = got.get(pixelKey);
    if (!c || c.error) { setStatus(status, `Could not load ${chunkWords(pixelKey, meta)}: ${c?.error ?? "missing"}`, "error"); return; }
    pixels = images.images.map((_, i) => c.arrays[`image${i}`] ?? null);
    draw.request();
  }).catch(() => undefined);

  const at = (e: MouseEvent): Hit | null => {
    const r = canvas.getBoundingClientRect();
    return hitTest(layout, e.clientX - r.left, e.clientY - r.top);
  };
  L.on<MouseEvent>(canvas, "mousemove", (e) => {
    const next = at(e);
    if (next?.column === hit?.column && (next == null) === (hit == null)) return;
    hit = next;
    draw.request();
  });
  L.on(canvas, "mouseleave", () => { hit = null; draw.request(); });

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) theme = readTheme(root, store.get().resolved_theme === "dark");
    if (changed.has("layer")) load();
    if (changed.has("head") && typeof choice === "number" && store.get().head !== choice) {
      choice = store.get().head;
      headSel.value = String(choice);
    }
    draw.request();
  });
  fillHeads();
  buildStrip();
  load();
  draw.request();
  return () => {
    unsub();
    step?.stop();
    draw.cancel();
    unsave();
    L.clear();
    view.remove();
  };
}
