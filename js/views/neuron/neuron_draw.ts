// The neuron view's drawing: the info line and the query's strip, then the visible
// rows of the key list (a virtualised list: a pool of row elements moved as it scrolls).
import { arr } from "../../data";
import { isolate, joinParts, labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import { tokenClasses } from "../../tokens";
import type { Chunk } from "../../wire/types";
import { fmt, fmtWeight, h, markDrawn, setStatus, sizeCanvas } from "../common";
import { syncHeadPicker } from "./neuron_controls";
import { computeRows } from "./neuron_load";
import { cellW, NROW, paintStrip, STRIP_H } from "./neuron_paint";
import { barFrac, type NeuronRows } from "./neuron_rows";
import { missingHeads, queryIdx, reason, sameSides, st, streamNow, type NeuronView, type RowEls } from "./neuron_state";

export const MAX_VIEW_H = 520;
const OVERSCAN = 4;

/** A strip on its own small canvas, the hovered dimension outlined. */
function strip(n: NeuronView, c: HTMLCanvasElement, values: (d: number) => number, D: number, max: number): void {
  const dpr = window.devicePixelRatio || 1;
  const ctx2 = sizeCanvas(c, D * cellW(D), STRIP_H, dpr);
  if (ctx2) paintStrip(canvasPainter(ctx2, n.theme.font, dpr), 0, 0, D, values, max, n.theme, n.hoverDim);
}

function fillRow(n: NeuronView, el: RowEls, j: number, r: NeuronRows, sel: number | null): void {
  const D = r.D;
  const sideK = n.sideK;
  const k = arr(n.chunk as Chunk, "k").data as Float32Array;
  el.row.dataset.key = String(j);
  el.row.dataset.qk = String(r.qk[j]);
  el.row.dataset.weight = String(r.weight[j]);
  el.row.className = `attnscope-nv-row${r.masked[j] ? " is-masked" : ""}${sel === j ? " is-selected" : ""}`;
  el.row.setAttribute("aria-selected", sel === j ? "true" : "false");
  el.label.className = tokenClasses(sideK, j);
  el.tok.replaceChildren(labelElement(sideK.labels[j] ?? String(j)));
  el.label.title = `${isolate(sideK.raw[j] ?? "")} (#${j})${sameSides(n) ? " — click to make it the query" : ""}`;
  strip(n, el.kc, (d) => k[j * D + d] as number, D, r.maxQK);
  strip(n, el.pc, (d) => (r.q[d] as number) * (k[j * D + d] as number), D, r.maxProd);
  el.qk.textContent = fmt(r.qk[j] as number);
  el.bias.hidden = !r.bias;
  if (r.bias) el.bias.textContent = fmt(r.bias[j] as number);
  el.score.textContent = r.masked[j] ? "masked" : fmt(r.score[j] as number);
  const w = r.weight[j] as number;
  el.bar.style.width = `${(barFrac(w, r) * 80).toFixed(1)}px`;
  el.w.textContent = fmtWeight(w);
}

function newRow(n: NeuronView): RowEls {
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
  n.dom.body.append(row);
  return { row, label, tok, kc, pc, qk, bias, score, bar: barEl, w };
}

function writeInfo(n: NeuronView, r: NeuronRows): void {
  const { info, qlabel, headCells, queryIn, qcanvas } = n.dom;
  const s = st(n);
  const sm = streamNow(n);
  const q = queryIdx(n);
  const parts = [
    `layer ${sm.layers[s.layer] ?? s.layer}`,
    `head ${s.head}${r.kvHead >= 0 && r.kvHead !== s.head ? ` (kv head ${r.kvHead})` : ""}`,
    [`query “`, labelElement(n.sideQ.labels[q] ?? ""), `” (#${q})`],
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
  qlabel.textContent = `q · ${isolate(n.sideQ.labels[q] ?? "")}`;
  const sw = `${r.D * cellW(r.D)}px`;
  (headCells[1] as HTMLElement).style.width = sw;
  (headCells[2] as HTMLElement).style.width = sw;
  (headCells[4] as HTMLElement).hidden = !r.bias;
  queryIn.max = String(sm.q_len - 1);
  if ((queryIn.getRootNode() as Document | ShadowRoot).activeElement !== queryIn) queryIn.value = String(q);
  strip(n, qcanvas, (d) => r.q[d] as number, r.D, r.maxQK);
}

/** Draw now: the reason the view cannot be shown, or the info line and the visible rows. */
export function drawNeuron(n: NeuronView): void {
  const { status, info, qline, head, viewport, bar, view, body, headSel } = n.dom;
  const why = reason(n);
  if (why) {
    setStatus(status, why, "info");
    info.hidden = qline.hidden = head.hidden = viewport.hidden = bar.hidden = true;
    markDrawn(view, true);
    return;
  }
  syncHeadPicker(headSel, streamNow(n).num_heads, st(n).head, missingHeads(n.ctx));
  computeRows(n);
  const r = n.rows;
  const ok = !!r && !!n.chunk && !n.chunk.error;
  info.hidden = qline.hidden = head.hidden = viewport.hidden = !ok;
  if (!ok || !r) { markDrawn(view, false); return; }
  writeInfo(n, r);
  const vh = Math.min(r.K * NROW, MAX_VIEW_H);
  viewport.style.height = `${vh}px`;
  body.style.height = `${r.K * NROW}px`;
  const top = viewport.scrollTop;
  const first = Math.max(0, Math.floor(top / NROW) - OVERSCAN);
  const last = Math.min(r.K - 1, Math.ceil((top + vh) / NROW) + OVERSCAN);
  const count = Math.max(0, last - first + 1);
  while (n.pool.length < count) n.pool.push(newRow(n));
  const sel = st(n).key;
  for (let p = 0; p < n.pool.length; p++) {
    const el = n.pool[p] as RowEls;
    if (p >= count) { el.row.hidden = true; continue; }
    el.row.hidden = false;
    el.row.style.top = `${(first + p) * NROW}px`;
    fillRow(n, el, n.order[first + p] as number, r, sel);
  }
  markDrawn(view, true);
}

/** The keys whose rows are visible now: an export shows what the reader sees. */
export function visibleKeys(n: NeuronView): number[] {
  const rows = n.rows;
  if (!rows) return [];
  const top = n.dom.viewport.scrollTop;
  const vh = Math.min(rows.K * NROW, MAX_VIEW_H);
  const out: number[] = [];
  for (let p = Math.floor(top / NROW); p < Math.min(rows.K, Math.ceil((top + vh) / NROW)); p++) out.push(n.order[p] as number);
  return out;
}
