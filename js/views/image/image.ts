// Image view: a vision-language model's attention drawn on its pictures. For the
// query (a text token: click one in the strip, or step through a generation), each
// image grid's heatmap over the picture (one head, the selected heads or the mean
// of all); hover a patch to see the text tokens that look at it most. This file
// mounts the elements and wires the parts: image_state.ts, image_load.ts,
// image_draw.ts, image_events.ts; geometry and painting in image_geometry.ts and
// image_paint.ts.
import { saveButtons } from "../../export_image";
import type { Cleanup, ViewContext } from "../../wire/types";
import { h, listeners, scheduler, type Listeners } from "../common";
import { stepControl } from "../head/head_step";
import { buildStrip, fillHeads, paintImageView } from "./image_draw";
import { bindImageEvents, followStore } from "./image_events";
import { loadLayer, loadPixels } from "./image_load";
import { imageScene, imageState, picture, query, type ImageDom, type ImageScene } from "./image_state";

export function renderImageView(ctx: ViewContext): Cleanup {
  const { store } = ctx;
  const L = listeners();
  const scene = imageScene(ctx);
  const dom = mountImageDom(ctx, scene, L);
  const v = imageState(ctx, scene, dom);
  // No query chosen: the view shows the last token's; say so to the store (and so to w.query).
  if (store.get().query == null) store.set({ query: query(v) });
  const unsave = saveButtons(dom.bar, {
    name: () => `attnscope-image-layer${scene.sm.layers[store.get().layer] ?? store.get().layer}-query${query(v)}`,
    picture: () => picture(v),
    caption: () => [dom.info.textContent ?? ""],
  });
  const draw = scheduler(() => paintImageView(v));
  v.redraw = () => draw.request();
  loadPixels(v);
  bindImageEvents(v, L);
  const unsub = followStore(v);
  fillHeads(v);
  buildStrip(v);
  loadLayer(v);
  draw.request();
  return () => {
    unsub();
    dom.step?.stop();
    draw.cancel();
    unsave();
    L.clear();
    dom.view.remove();
  };
}

/** The view's elements: toolbar (heads, scale, hint), the step control of a generation, status, info, strip and picture. */
function mountImageDom(ctx: ViewContext, scene: ImageScene, L: Listeners): ImageDom {
  const { store, root } = ctx;
  const view = h("div", "attnscope-view attnscope-imageview", { "data-testid": "image-view", "data-ready": "false", "data-draws": "0" });
  const bar = h("div", "attnscope-toolbar");
  const headSel = h("select", "attnscope-select", { "aria-label": "Heads of the heatmap", "data-testid": "image-heads" });
  const hint = h("span", "attnscope-hint");
  hint.textContent = "Click a token to make it the query; hover a patch to see which tokens look at it.";
  const scaleSel = h("select", "attnscope-select", { "aria-label": "Colour scale of the grids", "data-testid": "image-scale" });
  for (const [value, text] of [["grid", "scale: each grid"], ["shared", "scale: all grids"]] as const) {
    const o = h("option", "", { value });
    o.textContent = text;
    scaleSel.append(o);
  }
  bar.append(headSel, scaleSel, hint);
  const status = h("div", "attnscope-status");
  const info = h("div", "attnscope-iv-info", { "data-testid": "image-info", "aria-live": "polite" });
  const body = h("div", "attnscope-iv-body");
  const strip = h("div", "attnscope-iv-tokens", { role: "listbox", "aria-label": "Query token", "data-testid": "image-tokens" });
  const stage = h("div", "attnscope-iv-stage");
  const canvas = h("canvas", "attnscope-iv-canvas", { "data-testid": "image-canvas", role: "img", "aria-label": "Attention drawn on the image" });
  const hover = h("div", "attnscope-iv-hover", { "data-testid": "image-hover", "aria-live": "polite" });
  stage.append(canvas, hover);
  body.append(strip, stage);
  const step = scene.gen ? stepControl(L, store, scene.gen, () => scene.side) : null;
  view.append(bar, ...(step ? [step.el] : []), status, info, body);
  root.append(view);
  return { view, bar, headSel, scaleSel, status, info, strip, canvas, hover, step };
}
