// Model view: a grid, one row per layer and one column per head, each cell the
// head's thumbnail, all drawn into one canvas with one putImageData. This file
// mounts the elements and wires the parts: model_state.ts (what the parts share),
// model_load.ts (chunks), model_draw.ts (pictures), model_events.ts (pointer,
// controls, store); the grid's geometry and picture are in model_grid.ts.
import { hex, LONG_INPUT } from "../../colors";
import { saveButtons } from "../../export_image";
import { isolate } from "../../label_text";
import { offeredViews } from "../../offered_views";
import { streamOf } from "../../tokens";
import type { Cleanup, ViewContext } from "../../wire/types";
import { h, listeners, scheduler, watchResize } from "../common";
import { gridOrderSelect } from "../compare/compare_grid";
import { mountOverview } from "../overview/overview";
import { drawGrid, paintAll, ranked, sayScale, scene } from "./model_draw";
import { bindModelEvents, followStore, hideHover } from "./model_events";
import { loadStats, loadThumbs } from "./model_load";
import { rankSelect } from "./model_stats";
import { modelState, streamNow, type ModelDom } from "./model_state";

/**
 * The overview, open when the input is longer than a thumbnail shows; else (its map
 * would repeat one cell) a button that opens it.
 */
function overviewWhenItAdds(ctx: ViewContext, parent: HTMLElement): Cleanup {
  const sm = streamOf(ctx.meta, ctx.store.get().stream);
  if (sm.q_len > sm.thumb_rows || sm.k_len > sm.thumb_cols) return mountOverview(ctx, parent);
  const open = h("button", "attnscope-btn", { type: "button", "data-testid": "overview-open", title: "The grid's cells already show every weight of this input" });
  open.textContent = "overview of one head ▸";
  parent.append(open);
  let close: Cleanup = () => open.remove();
  open.addEventListener("click", () => { open.remove(); close = mountOverview(ctx, parent); }, { once: true });
  return () => close();
}

export function renderModelView(ctx: ViewContext): Cleanup {
  const { meta, store } = ctx;
  const L = listeners();
  const dom = mountModelDom(ctx, L);
  // The whole N × N of one head, zoomable (a comparison's sides have no tiles).
  const unOverview = ctx.side ? () => undefined : overviewWhenItAdds(ctx, dom.view);
  const m = modelState(ctx, dom);
  dom.scaleSel.value = m.heat; // the scale chosen before the view was last left
  sayScale(m);
  const sched = scheduler(() => drawGrid(m));
  m.redraw = () => sched.request();
  bindModelEvents(m, L);

  const unSave = saveButtons(dom.bar, {
    name: () => `attnscope-model-${store.get().stream}`,
    caption: () => {
      const s = store.get();
      const stat = ranked(m) ? m.statistics.find((x) => x.name === s.rank_by) : undefined;
      return [
        `${isolate(meta.title ?? "attnscope")} · model view · ${isolate(streamNow(m).label ?? s.stream)}${s.generated_only ? " · generated tokens' rows only" : ""}`,
        `rows: layers, columns: heads · ${dom.legend.textContent ?? ""}`,
        ...(stat ? [`ranked by ${isolate(stat.label)}: each layer's heads strongest first (${isolate(stat.formula)})`] : []),
      ];
    },
    picture: () => {
      const s = scene(m);
      return { width: m.geo.width, height: m.geo.height, background: hex(m.theme.bg), font: m.theme.font, paint: (p) => paintAll(m, p, s) };
    },
  });

  const unsub = followStore(m);
  const unResize = watchResize(dom.view, () => sched.request());
  loadThumbs(m);
  loadStats(m);

  return () => {
    sched.cancel();
    hideHover(m);
    unsub();
    unResize();
    unSave();
    unOverview();
    L.clear();
    dom.view.remove();
  };
}

/** The view's elements: toolbar (rank, generated rows, hint, scale, order), status, grid and preview. */
function mountModelDom(ctx: ViewContext, L: ReturnType<typeof listeners>): ModelDom {
  const { meta, store, root } = ctx;
  const view = h("div", "attnscope-view attnscope-modelview", { "data-testid": "model-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const hint = h("span", "attnscope-hint");
  const offered = offeredViews(meta);
  const opens = [
    offered.includes("head") ? `click a cell to open it in the head view${streamOf(meta, store.get().stream).q_len > LONG_INPUT ? " at the query row you click" : ""}` : "",
    offered.includes("neuron") ? "shift-click for the neuron view" : "",
  ].filter(Boolean).join(", ");
  hint.textContent = `Rows: layers · columns: heads. Hover a cell to enlarge it${opens ? `; ${opens}` : ""}.`;
  // A generation: cells may show the generated tokens' rows only (the `generated_only` trait).
  const onlyBox = h("input", "", { type: "checkbox", "data-testid": "generated-only" });
  const only = h("label", "attnscope-check", { title: "Each cell shows only the rows of the generated tokens" });
  only.append(onlyBox, " generated rows only");
  // Collapsed rows (`segment_rows`, the head view's box too): each image one row and column.
  const images = meta.segments?.by === "images";
  const segBox = h("input", "", { type: "checkbox", "data-testid": "model-toggle-segments" });
  const seg = h("label", "attnscope-check attnscope-mv-seg-toggle", {
    title: images
      ? "Each cell: a head's attention with each image one row and one column (its tokens' attention summed), every other token its own; unticked: every token"
      : "Each cell: a head's attention between segments (the mean over a segment's queries of the weight summed over each other's keys), or between tokens",
  });
  seg.append(segBox, images ? " collapse images" : ` ${meta.segments?.by === "positions" ? "segments" : meta.segments?.by ?? "segments"}`);
  seg.hidden = true;
  const scaleSel = h("select", "attnscope-select", { "aria-label": "Colour scale", "data-testid": "model-scale-select" });
  for (const [value, label] of [["linear", "scale: linear"], ["log", "scale: log"]] as const) {
    const o = h("option", "", { value });
    o.textContent = label;
    scaleSel.append(o);
  }
  const legend = h("span", "attnscope-scale", { "data-testid": "model-scale" });
  // A comparison has no statistics of its own (docs/protocol.md, "Comparisons").
  const statistics = meta.comparison ? [] : meta.statistics ?? [];
  const rankBy = statistics.length ? rankSelect(L, store, statistics) : null;
  if (rankBy) bar.append(rankBy);
  bar.append(only, seg, hint, scaleSel, legend);
  if (meta.comparison) bar.append(gridOrderSelect(L, store));
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
  return { view, bar, only, onlyBox, seg, segBox, scaleSel, legend, rankBy, status, wrap, canvas, preview, pcanvas, pcap };
}
