// Head view: query tokens left, key tokens right, one line per (query, key, head)
// from the top-k chunk. Virtualised rows, one canvas pass, capped line count.
// This file mounts the elements and wires the parts: head_state.ts (what the
// parts share), head_load.ts (chunks), head_draw.ts (lines, rows, legend, export)
// and head_events.ts (pointer, switches, store). The numbers live in
// head_lines.ts, the drawing in head_paint.ts, the token rows in head_tokens.ts
// and the toolbar in head_controls.ts.
import { saveButtons } from "../../export_image";
import type { Cleanup, ViewContext } from "../../wire/types";
import { listeners, scheduler, watchResize } from "../common";
import { diffLegend } from "../compare/compare_head";
import { rowOf, tokenOf } from "./head_analysis";
import { drawHead, exportLines, exportName, exportPicture } from "./head_draw";
import { bindHeadEvents, chooseScale, followStore, rebuildStream, toggleRollout } from "./head_events";
import { loadLayer } from "./head_load";
import { tokenSearch } from "./head_search";
import { headState, mountHeadDom, st } from "./head_state";

export function renderHeadView(ctx: ViewContext): Cleanup {
  const { store } = ctx;
  const L = listeners();
  const sched = scheduler(() => drawHead(v));
  // The controls call back into the view's state, made just after them (each call comes later, on an event).
  const dom = mountHeadDom(ctx, L, {
    redraw: () => sched.request(),
    scale: (scale) => chooseScale(v, scale),
    rollout: (on) => toggleRollout(v, on),
  });
  const v = headState(ctx, dom);
  v.redraw = () => sched.request();
  bindHeadEvents(v, L);

  const search = tokenSearch(L, () => v.display.sideQ, () => rowOf(v.display.wordsQ, st(v).query) ?? -1,
    (span) => { v.found = span; store.set({ query: tokenOf(v.display.startsQ, span.from) }); v.redraw(); });
  dom.bar.append(dom.swatchBox, dom.segToggle.el, dom.scaleBox.el, search, dom.rolloutBox.el);
  if (v.signed) dom.bar.append(diffLegend());
  const unSave = saveButtons(dom.bar, { name: () => exportName(v), caption: () => exportLines(v), picture: () => exportPicture(v) });

  const unsub = followStore(v, L);
  const unResize = watchResize(dom.viewport, () => sched.request());
  const unResizeSegments = watchResize(dom.segPanel.el, () => sched.request()); // the token rows are hidden then

  rebuildStream(v, L);
  loadLayer(v);

  return () => {
    sched.cancel();
    v.steps?.stop();
    unsub();
    unResize();
    unResizeSegments();
    unSave();
    L.clear();
    dom.view.remove();
  };
}
