// anywidget glue only: traits ⇄ store, custom messages ⇄ DataSource, then the app.
import { renderApp } from "./app";
import { offeredViews } from "./offered_views";
import { createChunkSource, decodeChunks, isChunksMessage, type RawBuffer } from "./data";
import { createStore, sameValue } from "./state";
import { DEFAULT_SELECTION, SELECTION_KEYS } from "./selection";
import type { AppState, Cleanup, Meta, ModelLike, Selection } from "./types";

/** The model's selection, the schema's default for each trait it lacks; the stream resolved against `meta`. */
function readSelection(model: ModelLike, meta: Meta): Selection {
  const sel: Record<string, unknown> = { ...DEFAULT_SELECTION };
  for (const k of SELECTION_KEYS) {
    const v = model.get(k);
    if (v !== undefined) sel[k] = v;
  }
  // The default stream (null) and a stream this trace lacks both mean its first one.
  if (typeof sel.stream !== "string" || !meta.streams[sel.stream]) sel.stream = Object.keys(meta.streams)[0];
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
