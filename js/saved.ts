// The chunks a widget's saved state holds (`_saved`: its first screen, docs/protocol.md
// "Saved widget state"), read without a kernel, so nbconvert, nbviewer and docs pages draw.
import { embeddedBytes, inflateBase64, splitConcatenated } from "./data";
import type { ModelHost } from "./traits";
import type { Chunk, EmbeddedChunk } from "./wire/types";

export type { EmbeddedChunk } from "./wire/types";

/** What a view says for a chunk the saved state lacks, under a widget manager with no kernel. */
export const NEEDS_KERNEL =
  "not in this notebook's saved widget state (it holds the view as it was displayed): " +
  "run the notebook for the rest, or save an offline page with widget.save_html(path)";

/** The note the app shows above a view drawn from saved state alone. */
export const SAVED_NOTE =
  "Drawn from the notebook's saved widget state, as it was displayed; other layers, heads " +
  "and views need a running kernel (or widget.save_html(path) for an offline page with all of them).";

/** Decode one embedded chunk (errors become the chunk's error). */
export async function decodeEmbedded(key: string, e: EmbeddedChunk): Promise<Chunk> {
  if (e.error) return { key, arrays: {}, error: e.error };
  try {
    const specs = e.arrays ?? [];
    const expected = embeddedBytes(specs);
    const bytes = e.data ? await inflateBase64(e.data, expected) : new Uint8Array(0);
    if (bytes.byteLength !== expected) throw new Error(`it holds ${bytes.byteLength} bytes where its arrays need ${expected}`);
    return { key, arrays: splitConcatenated(specs, bytes) };
  } catch (err) {
    return { key, arrays: {}, error: `could not decode: ${(err as Error).message}` };
  }
}

/** The model's saved chunks by key (none when the trait is missing or not an object). */
export function savedChunks(model: ModelHost): Record<string, EmbeddedChunk> {
  const saved = model.get("_saved");
  return typeof saved === "object" && saved !== null && !Array.isArray(saved) ? saved : {};
}

/**
 * True under a widget manager that has no kernel behind it: @jupyter-widgets/html-manager
 * (nbconvert's page, nbviewer, Jupyter Book, nbsphinx, mkdocs-jupyter) is a full widget
 * manager (it creates comms) with no `kernel`; JupyterLab's and Notebook 7's have one, and
 * hosts with their own model (marimo) create no comms this way.
 */
export function hasNoKernel(model: ModelHost): boolean {
  const manager: unknown = (model as { widget_manager?: unknown }).widget_manager;
  return typeof manager === "object" && manager !== null
    && typeof (manager as { _create_comm?: unknown })._create_comm === "function"
    && !("kernel" in manager);
}
