// The one binding of a model to the app, whatever hosts it: anywidget
// (js/widget.ts) or the exported page (js/standalone.ts). The selection and the
// chunks both travel through the model; the app never sees the host.
import { renderApp } from "./app";
import { createChunkDecoder, createChunkSource, isChunksMessage, type ChunkSource, type RawBuffer } from "./data";
import { offeredViews } from "./offered_views";
import { createStore } from "./state";
import { readSelection, syncSelection } from "./trait_sync";
import type { ModelHost } from "./traits";
import type { AppState, Cleanup } from "./types";

/** An alert in place of the app (no data, or the app failed); returns its removal. */
export function errorBox(el: HTMLElement, text: string): Cleanup {
  const box = document.createElement("div");
  box.className = "attnscope attnscope-error";
  box.setAttribute("role", "alert");
  box.textContent = text;
  el.append(box);
  return () => box.remove();
}

/** Chunks asked for with `request` messages and answered with `chunks` messages (docs/protocol.md, "Messages"). */
function chunksThrough(model: ModelHost): { data: ChunkSource; close: Cleanup } {
  const data = createChunkSource((keys) => model.send({ type: "request", keys }));
  const decode = createChunkDecoder();
  const onMsg = (content: unknown, buffers?: RawBuffer[]): void => {
    if (isChunksMessage(content)) data.receive(decode(content, buffers ?? []));
  };
  model.on("msg:custom", onMsg);
  return {
    data,
    close: () => {
      model.off("msg:custom", onMsg);
      data.dispose();
    },
  };
}

/** Mount the app on `el`, driven by `model`; returns the cleanup that undoes every listener. */
export function mount(model: ModelHost, el: HTMLElement): Cleanup {
  let teardown: Cleanup = () => undefined;
  const start = (): void => {
    teardown();
    const meta = model.get("_meta");
    if (!meta || !meta.streams || !Object.keys(meta.streams).length) {
      teardown = errorBox(el, "attnscope: this widget has no attention data (_meta is empty).");
      return;
    }
    const store = createStore<AppState>({ ...readSelection(model, meta), resolved_theme: "light", theme_rev: 0 });
    const chunks = chunksThrough(model);
    const unsync = syncSelection(model, store, offeredViews(meta));
    let cleanupApp: Cleanup;
    try {
      cleanupApp = renderApp({ meta, store, data: chunks.data, el });
    } catch (e) {
      cleanupApp = errorBox(el, `attnscope could not render: ${(e as Error).message}`);
    }
    teardown = () => {
      cleanupApp();
      unsync();
      chunks.close();
    };
  };
  model.on("change:_meta", start);
  start();
  return () => {
    teardown();
    model.off("change:_meta", start);
  };
}
