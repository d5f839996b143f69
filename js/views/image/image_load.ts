// The image view's chunks: the pictures (once) and the current layer's weights.
import { imageKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import { setStatus } from "../common";
import type { ImageView } from "./image_state";

/** Fetch the pictures of every image; draw when they are here. */
export function loadPixels(v: ImageView): void {
  const { data, meta } = v.ctx;
  const key = v.pixelKey;
  data.request([key]).then((got) => {
    const c = got.get(key);
    if (!c || c.error) {
      v.pixelsError = `Could not load ${chunkWords(key, meta)}: ${c?.error ?? "missing"}`;
      setStatus(v.dom.status, v.pixelsError, "error");
      return;
    }
    v.pixels = v.images.images.map((_, i) => c.arrays[`image${i}`] ?? null);
    v.redraw();
  }).catch(() => undefined);
}

/** Fetch the current layer's weights of the text queries over the image tokens, once per layer. */
export function loadLayer(v: ImageView): void {
  const { data, meta, store } = v.ctx;
  const { status } = v.dom;
  const key = imageKey(v.images.stream, store.get().layer);
  if (key === v.chunkKey) return;
  v.chunkKey = key;
  v.chunk = data.peek(key) ?? null;
  if (!v.chunk) setStatus(status, "Loading the image view's weights…");
  data.request([key]).then((got) => {
    if (key !== v.chunkKey) return;
    const chunk = got.get(key) ?? { key, arrays: {}, error: "missing" };
    v.chunk = chunk;
    // A picture that could not be loaded stays said: the view cannot draw without it.
    const error = chunk.error ? `Could not load ${chunkWords(key, meta)}: ${chunk.error}` : v.pixelsError;
    setStatus(status, error, error ? "error" : "info");
    v.redraw();
  }).catch(() => undefined);
}
