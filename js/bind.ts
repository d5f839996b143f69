// The one binding of a model to the app, whatever hosts it: anywidget
// (js/widget.ts) or the exported page (js/standalone.ts). The selection and the
// chunks both travel through the model; the app never sees the host.
import { renderApp } from "./app";
import { createChunkDecoder, createChunkSource, isChunksMessage, KERNEL_LOST, type ChunkSource, type RawBuffer } from "./data";
import { offeredViews } from "./offered_views";
import { type KernelLink, kernelLink } from "./kernel_link";
import { decodeEmbedded, NEEDS_KERNEL, savedChunks, savedNote, type EmbeddedChunk } from "./saved";
import { createStore } from "./state";
import { readSelection, syncSelection } from "./trait_sync";
import type { ModelHost } from "./traits";
import { checkChunk, contained } from "./wire/check_chunk";
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
 * first, and with no kernel behind the model (no comm: js/kernel_link.ts, asked at each request)
 * the rest are refused at once, saying why, instead of timing out.
 * Every chunk is checked against its key and `meta` before the views see it (js/wire/check_chunk.ts).
 */
function chunksThrough(model: ModelHost, meta: Meta, saved: Record<string, EmbeddedChunk>, link: KernelLink): { data: ChunkSource; close: Cleanup } {
  const refuse = (keys: string[], error: string): void => data.receive(keys.map((key) => ({ key, arrays: {}, error })));
  const ask = (keys: string[]): void => {
    if (link.none() === true) void Promise.resolve().then(() => refuse(keys, NEEDS_KERNEL));
    else model.send({ type: "request", keys });
  };
  const source = createChunkSource((keys) => {
    const held = keys.filter((k) => Object.hasOwn(saved, k));
    const asked = keys.filter((k) => !Object.hasOwn(saved, k));
    if (held.length) void Promise.all(held.map((k) => decodeEmbedded(k, saved[k] as EmbeddedChunk, meta))).then((cs) => data.receive(cs));
    if (!asked.length) return;
    // Settled: ask now, so a send that throws (a restarted kernel) reaches the source as KERNEL_LOST.
    if (link.settled()) ask(asked);
    else void link.ready.then(() => { try { ask(asked); } catch { refuse(asked, KERNEL_LOST); } });
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
      // The field's path may hold the notebook's own names (a stream's): isolated when it has bidi controls.
      teardown = errorBox(el, `attnscope: this widget's saved state is not valid: ${contained(problem)}.`, "state-invalid");
      return;
    }
    const store = createStore<AppState>({ ...readSelection(model, meta), resolved_theme: "light", theme_rev: 0 });
    const saved = savedChunks(model);
    const link = kernelLink(model);
    const chunks = chunksThrough(model, meta, saved, link);
    const unsync = syncSelection(model, store, offeredViews(meta));
    let cleanupApp: Cleanup = () => undefined;
    const render = (): void => {
      try {
        // No kernel behind it: the first screen is the saved state's, and the note says so.
        const shown = link.none() === true ? { ...meta, notes: [...(meta.notes ?? []), savedNote(saved, meta)] } : meta;
        cleanupApp = renderApp({ meta: shown, store, data: chunks.data, el });
      } catch (e) {
        cleanupApp = errorBox(el, `attnscope could not render: ${(e as Error).message}`);
      }
    };
    let live = true;
    // Under ipywidgets' managers the answer comes within microtasks (js/kernel_link.ts).
    if (link.settled()) render();
    else void link.ready.then(() => { if (live) render(); });
    teardown = () => {
      live = false;
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
