// The overview's drawing: the map (tiles, the selected query and key, row labels
// close in), where it is, the colour ramp, the title and the head select's options.
import { hex } from "../../colors";
import { IMAGE_LABEL_CHARS, imageLabel } from "../../label_text";
import { h, markDrawn, setStatus, sizeCanvas, widthOf } from "../common";
import { fitView, levelCount, spanAt, TILE, visibleTiles } from "./overview_geometry";
import { ask, bestImage } from "./overview_load";
import { keyOf, labels, streamNow, type Overview } from "./overview_state";

const SIDE_MAX = 560;
/** Pixels a token takes before rows are labelled with their tokens. */
const LABEL_PX = 12;

/** Draw the map now (always `true`: a panel without width draws at its smallest). */
export function paintOverview(o: Overview): boolean {
  const { store } = o.ctx;
  const { panel, canvas, where, status } = o.dom;
  const s = streamNow(o);
  const width = Math.min(SIDE_MAX, Math.max(200, widthOf(panel) - 8));
  if (width !== o.side) { o.side = width; o.view = fitView(s.q_len, s.k_len, o.side, o.side); }
  const side = o.side;
  const g = sizeCanvas(canvas, side, side);
  if (!g) return true;
  g.fillStyle = hex(o.theme.bg);
  g.fillRect(0, 0, side, side);
  g.imageSmoothingEnabled = false;
  const view = o.view;
  const tiles = visibleTiles(s.q_len, s.k_len, view, side, side);
  const level = tiles[0]?.level ?? 0;
  ask(o, [keyOf(o, { level: 0, row: 0, col: 0 }), ...tiles.map((t) => keyOf(o, t))]); // the whole first: it stands in for the rest
  const px = (tok: number, off: number): number => (tok - off) * view.scale;
  g.save();
  g.beginPath();
  g.rect(px(0, view.x0), px(0, view.y0), s.k_len * view.scale, s.q_len * view.scale);
  g.clip();
  let exact = 0;
  for (const t of tiles) {
    const best = bestImage(o, t);
    if (!best) continue;
    if (best.sw === TILE) exact++;
    const cover = TILE * spanAt(s.q_len, s.k_len, t.level);
    g.drawImage(best.img, best.sx, best.sy, best.sw, best.sw, px(t.col * cover, view.x0), px(t.row * cover, view.y0), cover * view.scale, cover * view.scale);
  }
  g.restore();
  const st = store.get();
  g.strokeStyle = hex(o.theme.fg);
  g.globalAlpha = 0.7;
  if (st.query != null) g.strokeRect(0, px(st.query, view.y0), side, Math.max(1, view.scale));
  // The find box's match (every piece of a word, a phrase), while the query is in it.
  if (o.found && (st.query == null || st.query < o.found.from || st.query > o.found.to)) o.found = null;
  if (o.found) {
    g.strokeStyle = "rgb(255, 176, 0)";
    g.strokeRect(0, px(o.found.from, view.y0), side, Math.max(2, (o.found.to - o.found.from + 1) * view.scale));
    g.strokeStyle = hex(o.theme.fg);
  }
  if (st.key != null) g.strokeRect(px(st.key, view.x0), 0, Math.max(1, view.scale), side);
  g.globalAlpha = 1;
  if (view.scale >= LABEL_PX) paintRowLabels(o, g, s.q_len);
  const first = Math.floor(view.y0), last = Math.min(s.q_len, Math.ceil(view.y0 + side / view.scale)) - 1;
  const keysFrom = Math.floor(view.x0), keysTo = Math.min(s.k_len, Math.ceil(view.x0 + side / view.scale)) - 1;
  const span = spanAt(s.q_len, s.k_len, level);
  where.textContent = `queries ${first}–${last}, keys ${keysFrom}–${keysTo} · level ${level + 1} of ${levelCount(s.q_len, s.k_len)}: a cell is ${span === 1 ? "one weight" : `${span} × ${span} tokens (its largest weight)`}`;
  Object.assign(panel.dataset, { level: String(level), firstRow: String(first), lastRow: String(last), y0: String(view.y0), x0: String(view.x0), scale: String(view.scale), tiles: `${exact}/${tiles.length}` });
  const errors = tiles.map((t) => o.failed.get(keyOf(o, t))).filter(Boolean);
  setStatus(status, errors.length ? `Could not load the overview of ${o.head === "mean" ? "the mean of heads" : `head ${o.head}`} here: ${errors[0] ?? ""}${exact ? "" : " (a coarser level is shown)"}` : null, errors.length ? "error" : "info");
  const done = exact === tiles.length || errors.length > 0;
  markDrawn(panel, done);
  return true;
}

/**
 * A row's label on the canvas: its index and token, cut by grapheme to the image labels' width
 * (never inside a surrogate pair or an emoji sequence) and isolated, so a bidi control in the
 * token cannot reorder the index.
 */
export function rowLabel(q: number, name: string): string {
  return `${q} ${imageLabel(name, Math.max(4, IMAGE_LABEL_CHARS - 1 - String(q).length))}`;
}

/** Close in, each visible row's token at the left edge, on the background. */
function paintRowLabels(o: Overview, g: CanvasRenderingContext2D, qLen: number): void {
  const { view, side, theme } = o;
  const names = labels(o);
  g.font = theme.font;
  g.textBaseline = "middle";
  for (let q = Math.max(0, Math.floor(view.y0)); q < Math.min(qLen, view.y0 + side / view.scale); q++) {
    const text = rowLabel(q, names[q] ?? "");
    const y = (q + 0.5 - view.y0) * view.scale;
    g.fillStyle = hex(theme.bg);
    g.globalAlpha = 0.8;
    g.fillRect(0, y - 6, g.measureText(text).width + 6, 12);
    g.globalAlpha = 1;
    g.fillStyle = hex(theme.fg);
    g.fillText(text, 3, y);
  }
}

/** The legend's colour ramp. */
export function paintRamp(o: Overview): void {
  const g = sizeCanvas(o.dom.ramp, 160, 10);
  if (!g) return;
  const lut = o.lut;
  for (let x = 0; x < 160; x++) {
    const b = 1 + Math.round((x / 159) * 254);
    g.fillStyle = `rgb(${lut[b * 4] ?? 0},${lut[b * 4 + 1] ?? 0},${lut[b * 4 + 2] ?? 0})`;
    g.fillRect(x, 0, 1, 10);
  }
}

/** The title: which layer, and what a click does. */
export function say(o: Overview): void {
  const { store } = o.ctx;
  o.dom.title.textContent = `Overview of layer ${streamNow(o).layers[store.get().layer] ?? store.get().layer} (log scale, 6 decades; click: open the head view there, shift-click: the neuron view)`;
}

/** The head select's options: each head of the stream, and their mean. */
export function fillHeads(o: Overview): void {
  const { headSel } = o.dom;
  const heads = streamNow(o).num_heads;
  headSel.replaceChildren();
  for (let i = 0; i < heads; i++) {
    const opt = h("option", "", { value: String(i) });
    opt.textContent = `head ${i}`;
    headSel.append(opt);
  }
  const opt = h("option", "", { value: "mean" });
  opt.textContent = "mean of heads";
  headSel.append(opt);
  if (o.head !== "mean" && o.head >= heads) o.head = 0;
  headSel.value = String(o.head);
}
