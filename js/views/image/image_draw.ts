// The image view's drawing: the picture (panels, heat, legend), the token strip
// with each query's share on the images, the info line and the hovered patch's words.
import { generationClasses } from "../../generation";
import { isolate, labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import { tokenClasses } from "../../tokens";
import { fmt, h, markDrawn, sizeCanvas } from "../common";
import { queryWeights, topQueries } from "./image_geometry";
import { heads, headWords, picture, query, rowsOf, weights, type ImageView } from "./image_state";

/** Text tokens a hovered patch names: the queries that weigh it most. */
const HOVER_TOP = 5;

/** The head select's options: the selected heads, their mean, or one head. */
export function fillHeads(v: ImageView): void {
  const { headSel } = v.dom;
  headSel.replaceChildren();
  const add = (value: string, text: string): void => { const o = h("option", "", { value }); o.textContent = text; headSel.append(o); };
  add("selected", "selected heads (head view)");
  add("mean", "mean of all heads");
  for (let i = 0; i < v.sm.num_heads; i++) add(String(i), `head ${i}`);
  headSel.value = String(v.choice);
}

/** The token strip: one button per text query (and a note when some were left out). */
export function buildStrip(v: ImageView): void {
  const { strip } = v.dom;
  const { images, side } = v;
  strip.replaceChildren();
  if (images.left_out) {
    const note = h("span", "attnscope-hint", { "data-testid": "image-left-out" });
    note.textContent = `… ${images.left_out} earlier text tokens not offered (a layer's weights over the image are capped at 32 MB)`;
    strip.append(note);
  }
  for (const q of images.queries) {
    const b = h("button", "", { type: "button", role: "option", "data-query": String(q), title: `${isolate(side.raw[q] ?? "")} (#${q}): click to make it the query` });
    b.append(labelElement(side.labels[q] ?? String(q)));
    strip.append(b);
  }
}

function syncStrip(v: ImageView, shares: Float32Array | null): void {
  const q = query(v), s = v.ctx.store.get();
  v.dom.strip.querySelectorAll<HTMLButtonElement>("button[data-query]").forEach((b, i) => {
    const at = Number(b.dataset.query);
    b.className = `${tokenClasses(v.side, at)}${generationClasses(v.gen, s.step, at)}${at === q ? " is-selected" : ""}`;
    b.setAttribute("aria-selected", at === q ? "true" : "false");
    const share = shares?.[i];
    b.style.setProperty("--share", share == null ? "0" : String(Math.min(1, share)));
    b.dataset.share = share == null ? "" : String(share);
  });
}

/** Each text token's share of its attention that lands on the images (selected heads). */
function shares(v: ImageView): Float32Array | null {
  const d = rowsOf(v.chunk);
  if (!d) return null;
  const out = new Float32Array(d.queries), hs = heads(v);
  for (let r = 0; r < d.queries; r++) { let s = 0; const w = queryWeights(d, hs, r); for (const x of w) s += x; out[r] = s; }
  return out;
}

function writeHover(v: ImageView): void {
  const { hover } = v.dom;
  const { hit, images, side } = v;
  const d = rowsOf(v.chunk);
  if (!hit || !d) { hover.replaceChildren(hit ? "" : "Hover a patch to see which text tokens attend to it most."); hover.dataset.tokens = ""; return; }
  const { panel, row, col, column } = hit;
  // Words, not the markers a processor puts around images, when any word looks at the patch.
  const ranked = topQueries(d, heads(v), column, d.queries);
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

function writeInfo(v: ImageView): void {
  const { info } = v.dom;
  const { images, side } = v;
  const q = query(v), w = weights(v), s = v.ctx.store.get();
  const layerNo = v.sm.layers[s.layer] ?? s.layer;
  let total = 0;
  if (w) for (const x of w) total += x;
  const pics = images.images.length > 1 ? "images" : "image";
  const before = q < v.firstImageToken && total === 0 ? ` (it comes before the ${pics}: a causal model's token sees only earlier ones)` : "";
  const share = w ? ` · ${(total * 100).toFixed(total < 0.01 ? 2 : 1)}% of its attention on the ${pics}${before}` : "";
  info.replaceChildren(`layer ${layerNo} · ${headWords(v)} · query `, "\u201C", labelElement(side.labels[q] ?? ""), `\u201D (#${q})${share}`);
  const stale = s.query != null && !images.queries.includes(s.query);
  if (stale) info.append(` (token #${s.query} is an image token: the last text token is shown)`);
}

/** Draw now: the picture, the strip, the info and hover lines, the step control. */
export function paintImageView(v: ImageView): boolean {
  const { canvas, view, step } = v.dom;
  const dpr = window.devicePixelRatio || 1;
  const pic = picture(v);
  const c2 = sizeCanvas(canvas, pic.width, pic.height, dpr);
  if (c2) {
    const p = canvasPainter(c2, pic.font, dpr);
    p.rect(0, 0, pic.width, pic.height, pic.background);
    pic.paint(p);
  }
  syncStrip(v, shares(v));
  writeInfo(v);
  writeHover(v);
  step?.sync();
  view.dataset.query = String(query(v));
  // Where each grid is drawn (CSS px in the canvas: x, y, w, h, rows, cols), for tests and tools.
  canvas.dataset.panels = JSON.stringify(v.layout.panels.map((q) => [q.x, q.y, q.w, q.h, q.rows, q.cols]));
  view.dataset.layer = String(v.ctx.store.get().layer);
  markDrawn(view, !!rowsOf(v.chunk) && v.pixels.every(Boolean));
  return true;
}
