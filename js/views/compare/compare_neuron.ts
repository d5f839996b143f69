// The neuron view of a comparison's A − B: for one layer, head and query, each
// key's q·k and softmax weight in A and in B side by side, with their change, and
// for the selected key the per-dimension q×k of both inputs. This file mounts the
// elements and wires the parts: compare_neuron_state.ts (what the parts share, and
// the side-by-side numbers), compare_neuron_load.ts, compare_neuron_draw.ts and
// compare_neuron_events.ts.
import { streamOf } from "../../tokens";
import type { Cleanup, ViewContext } from "../../wire/types";
import { h, type Listeners, listeners, scheduler } from "../common";
import { headPicker } from "../neuron/neuron_controls";
import { drawCompareNeuron } from "./compare_neuron_draw";
import { bindCompareNeuronEvents, followStore } from "./compare_neuron_events";
import { loadCompareNeuron } from "./compare_neuron_load";
import { compareNeuronState, queryIdx, stream, type CompareNeuronDom } from "./compare_neuron_state";

export function renderCompareNeuron(ctx: ViewContext): Cleanup {
  const L = listeners();
  const dom = mountCompareNeuronDom(ctx, L);
  const v = compareNeuronState(ctx, dom);
  // No query chosen: the view explains the default one; say so to the store (and so to w.query).
  if (ctx.store.get().query == null && !ctx.meta.neuron_unavailable && stream(v).head_dim != null) ctx.store.set({ query: queryIdx(v) });
  const sched = scheduler(() => drawCompareNeuron(v));
  v.redraw = () => sched.request();
  bindCompareNeuronEvents(v, L);
  const unsub = followStore(v);
  loadCompareNeuron(v);

  return () => {
    sched.cancel();
    unsub();
    L.clear();
    dom.view.remove();
  };
}

/** The view's elements: toolbar (head picker, query input), status, info line, strips and the keys' table. */
function mountCompareNeuronDom(ctx: ViewContext, L: Listeners): CompareNeuronDom {
  const view = h("div", "attnscope-view attnscope-neuronview attnscope-cmpneuron", { "data-testid": "compare-neuron-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const queryIn = h("input", "attnscope-input", { type: "number", min: "0", step: "1", "aria-label": "Query token index", "data-testid": "neuron-query" });
  // The same head picker as the neuron view's (one option per head), bound to the store.
  const headIn = headPicker(L, ctx.store, () => streamOf(ctx.meta, ctx.store.get().stream).num_heads);
  const queryLab = h("label", "attnscope-hint");
  queryLab.append("query #", queryIn);
  bar.append(headIn, queryLab);
  const status = h("div", "attnscope-status");
  const info = h("div", "attnscope-nv-info", { "data-testid": "neuron-info" });
  const detail = h("div", "attnscope-cmp-detail", { "data-testid": "compare-detail" });
  const table = h("div", "attnscope-cmp-table", { role: "listbox", "aria-label": "Keys: q·k and weight in A and B" });
  view.append(bar, status, info, detail, table);
  ctx.root.append(view);
  return { view, queryIn, headIn, status, info, detail, table };
}
