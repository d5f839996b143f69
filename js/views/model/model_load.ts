// The model view's chunks: the stream's thumbnails, and its statistics once a
// ranking is chosen (or a hovered cell shows them).
import { statsKey, thumbsKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import { setStatus } from "../common";
import { drawPreview } from "./model_draw";
import { firstRow, type ModelView } from "./model_state";

/** Fetch the thumbnails of the stream (its generated rows only when the trait says so), once per key. */
export function loadThumbs(m: ModelView): void {
  const { store, data, meta } = m.ctx;
  const key = thumbsKey(store.get().stream, firstRow(m) || undefined);
  if (key === m.loadedKey) return;
  m.loadedKey = key;
  m.thumbs = data.peek(key) ?? null;
  if (!m.thumbs) setStatus(m.dom.status, "Loading thumbnails…");
  data.request([key]).then((got) => {
    if (key !== m.loadedKey) return;
    const thumbs = got.get(key) ?? { key, arrays: {}, error: "missing" };
    m.thumbs = thumbs;
    setStatus(m.dom.status, thumbs.error ? `Could not load ${chunkWords(key, meta)}: ${thumbs.error}` : null, thumbs.error ? "error" : "info");
    m.redraw();
  }).catch(() => undefined);
  m.redraw();
}

/** The statistics of the stream, once a ranking is chosen (or to show numbers on hover). */
export function loadStats(m: ModelView, onHover = false): void {
  const { store, data, meta } = m.ctx;
  const key = statsKey(store.get().stream);
  if (!m.statistics.length || !(store.get().rank_by || onHover) || key === m.statsLoaded) return;
  m.statsLoaded = key;
  m.stats = data.peek(key) ?? null;
  data.request([key]).then((got) => {
    if (key !== m.statsLoaded) return;
    const stats = got.get(key) ?? { key, arrays: {}, error: "missing" };
    m.stats = stats;
    if (stats.error) setStatus(m.dom.status, `Could not load ${chunkWords(key, meta)}: ${stats.error}`, "error");
    if (m.hoverCell) drawPreview(m, m.hoverCell);
    m.redraw();
  }).catch(() => undefined);
}
