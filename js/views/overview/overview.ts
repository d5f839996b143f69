// The overview: one head's (or the layer mean's) whole N × N as a zoomable map of
// tiles (docs/protocol.md, "Overview tiles"), inside the model view. Wheel or the
// buttons zoom, drag pans, a click opens the head view at that query (shift: the
// neuron view) with the clicked key selected; the search box finds a token and
// brings the map and the query there. This file mounts the elements and wires the
// parts: overview_state.ts, overview_load.ts (tiles), overview_draw.ts (the map),
// overview_events.ts; the geometry is in overview_geometry.ts.
import type { Cleanup, ViewContext } from "../../wire/types";
import { h, listeners, scheduler, type Listeners } from "../common";
import { tokenSearch, type Searchable, type Span } from "../head/head_search";
import { fillHeads, paintOverview, paintRamp, say } from "./overview_draw";
import { bindOverviewEvents, followStore, jump } from "./overview_events";
import { overviewState, searchSide, type Overview, type OverviewDom } from "./overview_state";

export function mountOverview(ctx: ViewContext, parent: HTMLElement): Cleanup {
  const L = listeners();
  // The search box is made with the toolbar, before the state it reads: it calls back only on input.
  const dom = mountOverviewDom(ctx, parent, L, () => searchSide(o), (span) => { o.found = span; jump(o, span.from); });
  const o: Overview = overviewState(ctx, dom);
  const sched = scheduler(() => paintOverview(o));
  o.redraw = () => sched.request();
  bindOverviewEvents(o, L);
  const unsub = followStore(o);
  fillHeads(o);
  paintRamp(o);
  say(o);
  sched.request();
  return () => {
    sched.cancel();
    unsub();
    L.clear();
    dom.panel.remove();
  };
}

/** The panel's elements: toolbar (title, head, zoom, whole, search, where), status, map, legend. */
function mountOverviewDom(ctx: ViewContext, parent: HTMLElement, L: Listeners, sideNow: () => Searchable, onFind: (span: Span) => void): OverviewDom {
  const { store } = ctx;
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
  const search = tokenSearch(L, sideNow, () => store.get().query ?? -1, onFind);
  search.querySelector("input")?.setAttribute("data-testid", "overview-search");
  search.querySelector("[data-testid=head-search-count]")?.setAttribute("data-testid", "overview-search-count");
  search.querySelector("[data-testid=head-search-mode]")?.setAttribute("data-testid", "overview-search-mode");
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
  return { panel, title, headSel, zoomIn, zoomOut, fit, where, status, canvas, ramp };
}
