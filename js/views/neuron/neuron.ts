// Neuron view: why a weight is what it is. For one layer, head and query token:
// q, every k, q×k per dimension, q·k, scale, bias/softcap/sink, and the softmax weight.
// The numbers are in neuron_rows.ts, the drawing in neuron_paint.ts. This file mounts
// the elements and wires the parts: neuron_state.ts (what they share), neuron_load.ts
// (q/k chunks, rows), neuron_draw.ts (info line, virtualised rows), neuron_events.ts.
import { arr } from "../../data";
import { saveButtons } from "../../export_image";
import { imageLabel, isolate } from "../../label_text";
import { streamOf } from "../../tokens";
import type { Cleanup, ViewContext } from "../../wire/types";
import { fmt, h, listeners, scheduler, type Listeners } from "../common";
import { headPicker } from "./neuron_controls";
import { drawNeuron, visibleKeys } from "./neuron_draw";
import { bindNeuronEvents, followStore } from "./neuron_events";
import { loadQk } from "./neuron_load";
import { rowsPicture } from "./neuron_paint";
import { missingHeads, neuronState, queryIdx, sayShownQuery, st, streamNow, type NeuronDom } from "./neuron_state";
import { whyInputOf, whyPanel } from "./neuron_why";

export function renderNeuronView(ctx: ViewContext): Cleanup {
  const { meta } = ctx;
  const L = listeners();
  const dom = mountNeuronDom(ctx, L);
  const n = neuronState(ctx, dom);
  sayShownQuery(n);
  const why = whyPanel(dom.view, dom.qline, L, ctx.data, (p) => ctx.store.set(p), () => n.redraw());
  const sched = scheduler(() => {
    drawNeuron(n);
    why.show(whyInputOf(n));
  });
  n.redraw = () => sched.request();
  bindNeuronEvents(n, L);

  const unSave = saveButtons(dom.bar, {
    name: () => `attnscope-neuron-L${st(n).layer}-H${st(n).head}`,
    caption: () => {
      const s = st(n), r = n.rows;
      const kv = r && r.kvHead >= 0 && r.kvHead !== s.head ? ` (kv head ${r.kvHead})` : "";
      const score = r ? `score = q·k × ${fmt(r.scaling)}${r.bias ? " + bias" : ""}${r.softcap ? `, softcap ${fmt(r.softcap)}` : ""}` : "";
      return [
        `${isolate(meta.title ?? "attnscope")} · neuron view · layer ${streamNow(n).layers[s.layer] ?? s.layer} · head ${s.head}${kv}`,
        `query “${imageLabel((n.sideQ.labels[queryIdx(n)] ?? "").trim())}” (#${queryIdx(n)}) · ${score} · weight = softmax(score)${r?.sink != null ? " with a sink" : ""}`,
        `keys: the ${visibleKeys(n).length} rows in view of ${r?.K ?? 0}, ${dom.sortSel.value === "weight" ? "strongest first" : "in order"}`,
      ];
    },
    picture: () => (n.rows && n.chunk && !n.chunk.error ? rowsPicture({
      rows: n.rows,
      k: arr(n.chunk, "k").data as Float32Array,
      keys: visibleKeys(n),
      queryLabel: n.sideQ.labels[queryIdx(n)] ?? "",
      keyLabel: (j) => n.sideK.labels[j] ?? String(j),
      theme: n.theme,
    }) : null),
  });

  const unsub = followStore(n);
  loadQk(n);

  return () => {
    sched.cancel();
    unsub();
    unSave();
    L.clear();
    dom.view.remove();
  };
}

/** The view's elements: toolbar (head, query, sort), status, info line, query strip, key list. */
function mountNeuronDom(ctx: ViewContext, L: Listeners): NeuronDom {
  const { meta, store, root } = ctx;
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
  const headSel = headPicker(L, store, () => streamOf(meta, store.get().stream).num_heads, () => missingHeads(ctx));
  bar.append(headSel, queryLab, sortSel);
  view.append(bar, status, info, qline, head, viewport);
  root.append(view);
  return { view, bar, status, info, qline, qlabel, qcanvas, readout, head, headCells, viewport, body, sortSel, queryIn, headSel };
}
