// The one binding of a model to the app, whatever hosts it: anywidget
// (js/widget.ts) or the exported page (js/standalone.ts). The selection and the
// chunks both travel through the model; the app never sees the host.
import { renderApp } from "./app";
import { createChunkDecoder, createChunkSource, isChunksMessage, type ChunkSource, type RawBuffer } from "./data";
import { offeredViews } from "./offered_views";
import { decodeEmbedded, hasNoKernel, NEEDS_KERNEL, SAVED_NOTE, savedChunks, type EmbeddedChunk } from "./saved";
import { createStore } from "./state";
import { readSelection, syncSelection } from "./trait_sync";
import type { ModelHost } from "./traits";
import { checkChunk } from "./wire/check_chunk";
import type { AppState, Cleanup, Meta } from "./wire/types";
import { metaProblem } from "./wire/validate_meta";

/** An alert in place of the app (no data, or the app failed); returns its removal. */
export function errorBox(el: HTMLElement, text: string, testid = "attnscope-error"): Cleanup {
  const box = document.createElement("div");
  box.className = "attnscope attnscope-error";
  box.setAttribute("role", "alert");
  box.dataset.testid = testid;
  box.textContent = text;
  el.append(box);
  return () => box.remove();
}

/**
 * Chunks asked for with `request` messages and answered with `chunks` messages
 * (docs/protocol.md, "Messages"); those the saved state holds are read from it
 * first, and with no kernel behind the model the rest are refused at once, saying why.
 * Every chunk is checked against its key and `meta` before the views see it (js/wire/check_chunk.ts).
 */
function chunksThrough(model: ModelHost, meta: Meta, saved: Record<string, EmbeddedChunk>, kernelless: boolean): { data: ChunkSource; close: Cleanup } {
  const source = createChunkSource((keys) => {
    const held = keys.filter((k) => Object.hasOwn(saved, k));
    const asked = keys.filter((k) => !Object.hasOwn(saved, k));
    if (held.length) void Promise.all(held.map((k) => decodeEmbedded(k, saved[k] as EmbeddedChunk, meta))).then((cs) => data.receive(cs));
    if (!asked.length) return;
    if (kernelless) void Promise.resolve().then(() => data.receive(asked.map((key) => ({ key, arrays: {}, error: NEEDS_KERNEL }))));
    else model.send({ type: "request", keys: asked });
  });
  const data: ChunkSource = { ...source, receive: (cs) => source.receive(cs.map((c) => checkChunk(meta, c))) };
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
    if (!meta?.streams || !Object.keys(meta.streams).length) {
      teardown = errorBox(el, "attnscope: this widget has no attention data (_meta is empty).");
      return;
    }
    // Saved state is untrusted input: nothing mounts on a _meta out of its caps (js/wire/validate_meta.ts).
    const problem = metaProblem(meta);
    if (problem) {
      teardown = errorBox(el, `attnscope: this widget's saved state is not valid: ${problem}.`, "state-invalid");
      return;
    }
    const store = createStore<AppState>({ ...readSelection(model, meta), resolved_theme: "light", theme_rev: 0 });
    const saved = savedChunks(model);
    const kernelless = hasNoKernel(model) && Object.keys(saved).length > 0;
    const chunks = chunksThrough(model, meta, saved, kernelless);
    const unsync = syncSelection(model, store, offeredViews(meta));
    let cleanupApp: Cleanup;
    try {
      const shown = kernelless ? { ...meta, notes: [...(meta.notes ?? []), SAVED_NOTE] } : meta;
      cleanupApp = renderApp({ meta: shown, store, data: chunks.data, el });
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
