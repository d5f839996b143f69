// The comparison neuron view's pictures: the info line, the selected key's q×k
// strips of both inputs, and the table of each key's q·k and weight in A and B
// with a bar for the change.
import { rgba } from "../../colors";
import { chunkWords } from "../../chunk_words";
import { arr } from "../../data";
import { isolate, joinParts, labelElement } from "../../label_text";
import { canvasPainter } from "../../paint/canvas_painter";
import { tokenClasses } from "../../tokens";
import type { Chunk } from "../../wire/types";
import { fmt, fmtWeight, h, markDrawn, setStatus, sizeCanvas } from "../common";
import { cellW, paintStrip, STRIP_H } from "../neuron/neuron_paint";
import { syncHeadPicker } from "../neuron/neuron_controls";
import { signedColor } from "./compare_colors";
import { keysNow, queryIdx, sideBySide, sides, st, stream, type CompareNeuronView, type SideBySide } from "./compare_neuron_state";

const COLUMNS = ["key", "q·k A", "q·k B", "Δ q·k", "weight A", "weight B", "Δ weight"] as const;

/** The selected key's q × k per dimension, in A and in B on one scale. */
function strips(v: CompareNeuronView, r: SideBySide, D: number): void {
  const { detail } = v.dom;
  const { theme } = v;
  detail.replaceChildren();
  const { sideK } = sides(v);
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
    const k = arr(v.chunks[name === "A" ? keysNow(v).qkA : keysNow(v).qkB] as Chunk, "k").data;
    if (ctx2) paintStrip(canvasPainter(ctx2, theme.font, dpr), 0, 0, D, (d) => (rows.q[d] as number) * (k[r.key * D + d] as number), max, theme);
    const note = h("span", "attnscope-nv-readout");
    note.textContent = `q·k = ${fmt(rows.qk[r.key] as number)} · weight ${fmtWeight(rows.weight[r.key] as number)}`;
    line.append(label, c, note);
    detail.append(line);
  }
}

/** One key's row: its label, q·k and weight in A and B, their changes, and a bar in the winning side's colour. */
function row(v: CompareNeuronView, r: SideBySide, j: number, selected: boolean): HTMLElement {
  const { sideK } = sides(v);
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
  barEl.style.background = rgba(signedColor(t < 0 ? -1 : 1, v.theme), 1);
  el.append(label, ...cells, barEl);
  return el;
}

export function drawCompareNeuron(v: CompareNeuronView): void {
  const { meta } = v.ctx;
  const { view, status, info, detail, table, queryIn, headIn } = v.dom;
  const s = st(v);
  const k = keysNow(v);
  const qkA = v.chunks[k.qkA], qkB = v.chunks[k.qkB];
  const failed = [qkA, qkB].find((c) => c?.error);
  if (meta.neuron_unavailable || stream(v).head_dim == null) {
    setStatus(status, meta.neuron_unavailable ?? "This stream has no q/k vectors, so q·k cannot be shown.", "info");
    info.hidden = detail.hidden = table.hidden = true;
    markDrawn(view, true);
    return;
  }
  if (failed) setStatus(status, `Could not load ${chunkWords(failed.key, meta)}: ${failed.error}`, "error");
  if (!qkA || !qkB || failed) { markDrawn(view, false); return; }
  const q = queryIdx(v);
  const r = sideBySide(qkA, qkB, q, s.key, v.chunks[k.attnA], v.chunks[k.attnB]);
  const { sideQ } = sides(v);
  const sm = stream(v);
  const checked = [r.a, r.b].every((x) => x.recomputeError <= x.recordedTolerance);
  info.replaceChildren(...joinParts([
    `layer ${sm.layers[s.layer] ?? s.layer}`, `head ${s.head}`, ["query “", labelElement(sideQ.labels[q] ?? ""), `” (#${q})`],
    "q·k and weight = softmax(q·k × scale …) of each key in A and in B; Δ = A − B",
    ...(checked ? ["both match the recorded weights"] : []),
  ], " · "));
  strips(v, r, r.a.D);
  const head = h("div", "attnscope-nv-row attnscope-nv-head");
  for (const c of COLUMNS) {
    const span = h("span", c === "key" ? "" : "attnscope-nv-num");
    span.textContent = c;
    head.append(span);
  }
  table.replaceChildren(head, ...Array.from({ length: r.a.K }, (_, j) => row(v, r, j, j === r.key)));
  if ((queryIn.getRootNode() as Document | ShadowRoot).activeElement !== queryIn) queryIn.value = String(q);
  syncHeadPicker(headIn, sm.num_heads, s.head);
  queryIn.max = String(sm.q_len - 1);
  view.dataset.shownKey = String(r.key);
  info.hidden = detail.hidden = table.hidden = false;
  markDrawn(view, true);
}
