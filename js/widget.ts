// anywidget glue only: traits ⇄ store, custom messages ⇄ DataSource, then the app.
import { offeredViews, renderApp } from "./app";
import { createChunkSource, decodeChunks, isChunksMessage, type RawBuffer } from "./data";
import { createStore, sameValue } from "./state";
import { SELECTION_KEYS, type AppState, type Cleanup, type Meta, type ModelLike, type Selection } from "./types";

const DEFAULTS: Selection = {
  view: "head", stream: "self", layer: 0, heads: [], head: 0, query: null, key: null, pair_filter: "all", theme: "auto",
};

function readSelection(model: ModelLike, meta: Meta): Selection {
  const sel = { ...DEFAULTS } as Record<string, unknown>;
  for (const k of SELECTION_KEYS) {
    const v = model.get(k);
    if (v !== undefined) sel[k] = v;
  }
  if (!meta.streams[sel.stream as string]) sel.stream = Object.keys(meta.streams)[0] ?? "self";
  return sel as unknown as Selection;
}

function errorBox(el: HTMLElement, text: string): Cleanup {
  const box = document.createElement("div");
  box.className = "attnscope attnscope-error";
  box.setAttribute("role", "alert");
  box.textContent = text;
  el.append(box);
  return () => box.remove();
}

/** Mount the app on `el`, driven by `model`; returns the cleanup that undoes every listener. */
export function mount(model: ModelLike, el: HTMLElement): Cleanup {
  let teardown: Cleanup = () => undefined;
  const start = (): void => {
    teardown();
    const meta = model.get("_meta") as Meta | undefined;
    if (!meta || !meta.streams || !Object.keys(meta.streams).length) {
      teardown = errorBox(el, "attnscope: this widget has no attention data (_meta is empty).");
      return;
    }
    const store = createStore<AppState>({ ...readSelection(model, meta), resolved_theme: "light", theme_rev: 0 });
    const data = createChunkSource((keys) => model.send({ type: "request", keys }));
    const onMsg = (content: unknown, buffers?: RawBuffer[]): void => {
      if (isChunksMessage(content)) data.receive(decodeChunks(content, buffers ?? []));
    };
    model.on("msg:custom", onMsg);
    const handlers = SELECTION_KEYS.map((k) => {
      const fn = (): void => {
        const v = model.get(k);
        if (v !== undefined && v !== null || k === "query" || k === "key") store.set({ [k]: v } as Partial<AppState>);
      };
      model.on(`change:${k}`, fn);
      return [k, fn] as const;
    });
    const offered = offeredViews(meta);
    const unsub = store.subscribe((changed) => {
      const state = store.get(); // fresh even when a subscriber set more in between
      let dirty = false;
      for (const k of SELECTION_KEYS) {
        if (!changed.has(k)) continue;
        // Python refuses a view it does not offer; the app redirects it to one it does.
        if (k === "view" && !offered.includes(state.view)) continue;
        if (!sameValue(model.get(k), state[k])) { model.set(k, state[k]); dirty = true; }
      }
      if (dirty) model.save_changes();
    });
    let cleanupApp: Cleanup;
    try {
      cleanupApp = renderApp({ meta, store, data, el });
    } catch (e) {
      cleanupApp = errorBox(el, `attnscope could not render: ${(e as Error).message}`);
    }
    teardown = () => {
      cleanupApp();
      unsub();
      model.off("msg:custom", onMsg);
      for (const [k, fn] of handlers) model.off(`change:${k}`, fn);
      data.dispose();
    };
  };
  model.on("change:_meta", start);
  start();
  return () => {
    teardown();
    model.off("change:_meta", start);
  };
}

export default {
  render({ model, el }: { model: unknown; el: HTMLElement }): Cleanup {
    return mount(model as ModelLike, el);
  },
};
