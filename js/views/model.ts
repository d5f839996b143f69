// Model view: a grid, one row per layer and one column per head, each cell the
// head's thumbnail, all drawn into one canvas with one putImageData.
import { hex, readTheme, weightLut, type ThemeColors } from "../colors";
import { arr } from "../data";
import { saveButtons, svgDocument, xmlEscape } from "../export_image";
import { attnKey, thumbsKey } from "../chunk_keys";
import { offeredViews } from "../offered_views";
import { streamOf } from "../tokens";
import type { Chunk, Cleanup, ViewContext } from "../types";
import { h, listeners, markDrawn, scheduler, setStatus, sizeCanvas, watchResize, widthOf } from "./common";

const LABEL_W = 34;
const LABEL_H = 16;
const GAP = 2;
const PREVIEW = 200;
const HOVER_FETCH_MS = 120;

export interface GridGeometry { cell: number; width: number; height: number }

export function gridGeometry(layers: number, heads: number, avail: number): GridGeometry {
  const cell = Math.max(10, Math.min(64, Math.floor((avail - LABEL_W) / heads) - GAP));
  return { cell, width: LABEL_W + heads * (cell + GAP), height: LABEL_H + layers * (cell + GAP) };
}

/** Block-max pool a (rows × cols) u8 image into (outH × outW) RGBA pixels through `lut`. */
export function poolInto(
  src: ArrayLike<number>, rows: number, cols: number, scale: ArrayLike<number> | null,
  out: Uint8ClampedArray, outStride: number, ox: number, oy: number, outW: number, outH: number, lut: Uint8ClampedArray,
): void {
  for (let y = 0; y < outH; y++) {
    const r0 = Math.floor((y * rows) / outH), r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / outH));
    for (let x = 0; x < outW; x++) {
      const c0 = Math.floor((x * cols) / outW), c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / outW));
      let m = 0;
      for (let r = r0; r < r1; r++) {
        const sc = scale ? (scale[r] as number) : 1;
        for (let c = c0; c < c1; c++) { const v = (src[r * cols + c] as number) * sc; if (v > m) m = v; }
      }
      const li = Math.min(255, Math.round(m)) * 4;
      const o = ((oy + y) * outStride + ox + x) * 4;
      out[o] = lut[li] as number; out[o + 1] = lut[li + 1] as number; out[o + 2] = lut[li + 2] as number; out[o + 3] = 255;
    }
  }
}

export function renderModelView(ctx: ViewContext): Cleanup {
  const { meta, store, data, root } = ctx;
  const L = listeners();
  const view = h("div", "attnscope-view attnscope-modelview", { "data-testid": "model-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const hint = h("span", "attnscope-hint");
  const offered = offeredViews(meta);
  const opens = [
    offered.includes("head") ? "click a cell to open it in the head view" : "",
    offered.includes("neuron") ? "shift-click for the neuron view" : "",
  ].filter(Boolean).join(", ");
  hint.textContent = `Rows: layers · columns: heads. Hover a cell to enlarge it${opens ? `; ${opens}` : ""}.`;
  bar.append(hint);
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

  let theme: ThemeColors = readTheme(root, store.get().resolved_theme === "dark");
  let lut = weightLut(theme);
  let thumbs: Chunk | null = null;
  let loadedKey = "";
  let geo: GridGeometry = { cell: 0, width: 0, height: 0 };
  let image: ImageData | null = null;
  let hoverCell: { l: number; h: number } | null = null;
  let hoverTimer: ReturnType<typeof setTimeout> | null = null;

  const stream = () => streamOf(meta, store.get().stream);
  /** Thumbnail rows and columns from the chunk's shape (falls back to _meta). */
  const thumbShape = (): [number, number] => {
    const sm = stream();
    const shape = thumbs && !thumbs.error ? arr(thumbs, "thumbs").shape : [];
    return [shape[2] ?? sm.thumb_rows, shape[3] ?? sm.thumb_cols];
  };

  function paintGrid(c: CanvasRenderingContext2D): void {
    const sm = stream();
    const Lc = sm.layers.length, H = sm.num_heads, [R, C] = thumbShape();
    c.fillStyle = hex(theme.bg);
    c.fillRect(0, 0, geo.width, geo.height);
    if (thumbs && !thumbs.error) {
      const t = arr(thumbs, "thumbs").data;
      const gw = geo.width - LABEL_W, gh = geo.height - LABEL_H;
      if (!image || image.width !== gw || image.height !== gh) image = c.createImageData(gw, gh);
      const px = image.data;
      px.fill(0);
      for (let l = 0; l < Lc; l++) {
        for (let hd = 0; hd < H; hd++) {
          const sub = t.subarray(((l * H + hd) * R) * C, ((l * H + hd + 1) * R) * C);
          poolInto(sub, R, C, null, px, gw, hd * (geo.cell + GAP), l * (geo.cell + GAP), geo.cell, geo.cell, lut);
        }
      }
      c.putImageData(image, LABEL_W, LABEL_H);
    }
    c.fillStyle = hex(theme.muted);
    c.font = theme.font;
    c.textBaseline = "middle";
    c.textAlign = "right";
    for (let l = 0; l < Lc; l++) c.fillText(`L${sm.layers[l] ?? l}`, LABEL_W - 4, LABEL_H + l * (geo.cell + GAP) + geo.cell / 2);
    c.textAlign = "center";
    const every = Math.ceil(22 / (geo.cell + GAP));
    for (let hd = 0; hd < H; hd += every) c.fillText(String(hd), LABEL_W + hd * (geo.cell + GAP) + geo.cell / 2, LABEL_H / 2);
    const s = store.get();
    c.strokeStyle = hex(theme.fg);
    c.lineWidth = 2;
    c.strokeRect(LABEL_W + s.head * (geo.cell + GAP) - 1, LABEL_H + s.layer * (geo.cell + GAP) - 1, geo.cell + 2, geo.cell + 2);
  }

  function draw(): void {
    const sm = stream();
    geo = gridGeometry(sm.layers.length, sm.num_heads, widthOf(view));
    const c = sizeCanvas(canvas, geo.width, geo.height);
    if (c) paintGrid(c);
    markDrawn(view, !!thumbs && !thumbs.error);
  }
  const sched = scheduler(draw);

  function load(): void {
    const key = thumbsKey(store.get().stream);
    if (key === loadedKey) return;
    loadedKey = key;
    thumbs = data.peek(key) ?? null;
    if (!thumbs) setStatus(status, "Loading thumbnails…");
    data.request([key]).then((m) => {
      if (key !== loadedKey) return;
      thumbs = m.get(key) ?? { key, arrays: {}, error: "missing" };
      setStatus(status, thumbs.error ? `Could not load ${key}: ${thumbs.error}` : null, thumbs.error ? "error" : "info");
      sched.request();
    }).catch(() => undefined);
    sched.request();
  }

  function cellAt(e: MouseEvent): { l: number; h: number } | null {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left - LABEL_W, y = e.clientY - r.top - LABEL_H;
    if (x < 0 || y < 0 || geo.cell <= 0) return null;
    const hd = Math.floor(x / (geo.cell + GAP)), l = Math.floor(y / (geo.cell + GAP));
    const sm = stream();
    if (hd >= sm.num_heads || l >= sm.layers.length) return null;
    return { l, h: hd };
  }

  function drawPreview(cell: { l: number; h: number }): void {
    const s = store.get();
    const sm = stream();
    pcap.textContent = `Layer ${sm.layers[cell.l] ?? cell.l} · head ${cell.h}`;
    const c = sizeCanvas(pcanvas, PREVIEW, PREVIEW);
    if (!c) return;
    const img = c.createImageData(PREVIEW, PREVIEW);
    const full = data.peek(attnKey(s.stream, cell.l, cell.h));
    if (full && !full.error) {
      const rm = arr(full, "rowmax").data;
      let mx = 0;
      for (const v of rm) if (v > mx) mx = v;
      // Keep per-row quantisation honest: scale each row by rowmax / max.
      const scale = Array.from(rm, (v) => (mx > 0 ? v / mx : 0));
      poolInto(arr(full, "weight").data, sm.q_len, sm.k_len, scale, img.data, PREVIEW, 0, 0, PREVIEW, PREVIEW, lut);
      preview.dataset.source = "attn";
    } else if (thumbs && !thumbs.error) {
      const [R, C] = thumbShape();
      const t = arr(thumbs, "thumbs").data;
      const off = (cell.l * sm.num_heads + cell.h) * R * C;
      poolInto(t.subarray(off, off + R * C), R, C, null, img.data, PREVIEW, 0, 0, PREVIEW, PREVIEW, lut);
      preview.dataset.source = "thumb";
    }
    c.putImageData(img, 0, 0);
  }

  L.on<MouseEvent>(canvas, "mousemove", (e) => {
    const cell = cellAt(e);
    if (!cell) { hideHover(); return; }
    preview.hidden = false;
    preview.style.left = `${Math.min(LABEL_W + (cell.h + 1) * (geo.cell + GAP) + 8, Math.max(0, geo.width - PREVIEW - 8))}px`;
    preview.style.top = `${LABEL_H + cell.l * (geo.cell + GAP)}px`;
    if (hoverCell?.l === cell.l && hoverCell.h === cell.h) return;
    hoverCell = cell;
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
    const cell = cellAt(e);
    if (cell) store.set({ layer: cell.l, heads: [cell.h], head: cell.h, view: e.shiftKey ? "neuron" : "head" });
  });

  const unSave = saveButtons(bar, {
    name: () => `attnscope-model-${store.get().stream}`,
    png: () => {
      const out = document.createElement("canvas");
      const c = sizeCanvas(out, geo.width, geo.height, 1);
      if (!c) return null;
      paintGrid(c);
      return out;
    },
    svg: () => {
      const sm = stream();
      const parts: string[] = [];
      // Each cell embedded as a PNG image: the grid is raster data by nature.
      const cellCanvas = document.createElement("canvas");
      for (let l = 0; l < sm.layers.length; l++) {
        const y = LABEL_H + l * (geo.cell + GAP);
        parts.push(`<text x="${LABEL_W - 4}" y="${y + geo.cell / 2}" font-family="sans-serif" font-size="10" text-anchor="end" dominant-baseline="middle" fill="${hex(theme.muted)}">L${sm.layers[l] ?? l}</text>`);
        for (let hd = 0; hd < sm.num_heads; hd++) {
          const x = LABEL_W + hd * (geo.cell + GAP);
          const c = sizeCanvas(cellCanvas, geo.cell, geo.cell, 1);
          if (!c || !thumbs || thumbs.error) continue;
          const img = c.createImageData(geo.cell, geo.cell);
          const [R, C] = thumbShape(), off = (l * sm.num_heads + hd) * R * C;
          poolInto(arr(thumbs, "thumbs").data.subarray(off, off + R * C), R, C, null, img.data, geo.cell, 0, 0, geo.cell, geo.cell, lut);
          c.putImageData(img, 0, 0);
          parts.push(`<image x="${x}" y="${y}" width="${geo.cell}" height="${geo.cell}" href="${xmlEscape(cellCanvas.toDataURL("image/png"))}"><title>layer ${sm.layers[l] ?? l} head ${hd}</title></image>`);
        }
      }
      return svgDocument(geo.width, geo.height, hex(theme.bg), parts);
    },
  });

  const unsub = store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      theme = readTheme(root, store.get().resolved_theme === "dark");
      lut = weightLut(theme);
    }
    if (changed.has("stream")) load();
    sched.request();
  });
  const unResize = watchResize(view, () => sched.request());
  load();

  return () => {
    sched.cancel();
    hideHover();
    unsub();
    unResize();
    unSave();
    L.clear();
    view.remove();
  };
}
