// The chunks a widget's saved state holds (`_saved`: its first screen, docs/protocol.md
// "Saved widget state"), read without a kernel, so nbconvert, nbviewer and docs pages draw.
import { chunkWords } from "./chunk_words";
import { embeddedBytes, inflateBase64, splitConcatenated } from "./data";
import { type DecodeLedger, pageLedger } from "./decode_budget";
import { isolate } from "./label_text";
import type { ModelHost } from "./traits";
import { arraysProblem, contained } from "./wire/check_chunk";
import type { ArraySpec, Chunk, EmbeddedChunk, Meta } from "./wire/types";

export type { EmbeddedChunk } from "./wire/types";

/** What a view says, at once, for a chunk the saved state lacks when no kernel stands behind the widget. */
export const NEEDS_KERNEL =
  "not in this notebook's saved widget state, and no kernel is connected to this widget: " +
  "run the cell to explore further (or save an offline page with widget.save_html(path))";

/** The note the app shows above a view drawn from saved state alone. */
export const SAVED_NOTE =
  "Drawn from the notebook's saved widget state, as it was displayed; no kernel is connected to " +
  "this widget: run the cell to explore further (other layers, heads and views), or save an offline " +
  "page with widget.save_html(path).";

/**
 * The note above a widget with no kernel behind it: that it is drawn from saved state, and what
 * that state holds in the views' words (a view whose first chunk was too large for it saves a
 * smaller first screen, another view's: display/snapshot.py).
 */
export function savedNote(saved: Record<string, EmbeddedChunk>, meta: Meta): string {
  const held = [...new Set(Object.keys(saved).map((k) => chunkWords(k, meta)))];
  if (!held.length) {
    return "This notebook's saved widget state holds none of this widget's data, and no kernel is " +
      "connected to it: run the cell to draw it.";
  }
  return `${SAVED_NOTE} It holds ${held.join("; ")}.`;
}

/** The specs of an embedded chunk, each an object with a name (anything else throws). */
function specsOf(e: unknown): ArraySpec[] {
  if (typeof e !== "object" || e === null || Array.isArray(e)) throw new Error("it is not an object");
  const specs = (e as EmbeddedChunk).arrays ?? [];
  if (!Array.isArray(specs)) throw new Error("its arrays are not a list");
  for (const s of specs as unknown[]) {
    if (typeof s !== "object" || s === null || typeof (s as ArraySpec).name !== "string") throw new Error("an array of it has no name");
  }
  return specs;
}

/**
 * Decode one embedded chunk (errors become the chunk's error). Before anything is inflated its
 * specs are checked (sizes, and with `meta` the arrays its key's kind holds: js/wire/check_chunk.ts)
 * and its decoded bytes charged to the page's budget (js/decode_budget.ts).
 */
export async function decodeEmbedded(key: string, e: EmbeddedChunk, meta?: Meta, ledger: DecodeLedger = pageLedger()): Promise<Chunk> {
  let refund = (): void => undefined;
  try {
    // The saved state's own error is its words: isolated in ours ("Could not load …: ⁨error⁩").
    if (typeof e?.error === "string") return { key, arrays: {}, error: isolate(e.error) };
    const specs = specsOf(e);
    const expected = embeddedBytes(specs);
    const problem = meta ? arraysProblem(meta, key, specs) : null;
    if (problem) return { key, arrays: {}, error: `it does not match the widget's _meta: ${contained(problem)}` };
    // float16 arrays decode to float32 beside the inflated bytes.
    const halves = specs.filter((s) => s.encoding === "f16-shuffled").reduce((n, s) => n + 4 * s.shape.reduce((a, b) => a * b, 1), 0);
    refund = ledger.charge(expected + halves);
    const bytes = typeof e.data === "string" && e.data ? await inflateBase64(e.data, expected) : new Uint8Array(0);
    if (bytes.byteLength !== expected) throw new Error(`it holds ${bytes.byteLength} bytes where its arrays need ${expected}`);
    const arrays = splitConcatenated(specs, bytes);
    // From here the bytes are the arrays': they are given back when the arrays are collected.
    refund = () => undefined;
    ledger.holdUntilCollected(bytes.buffer, expected);
    for (const a of Object.values(arrays)) if (a.data.buffer !== bytes.buffer) ledger.holdUntilCollected(a.data.buffer, a.data.byteLength);
    return { key, arrays };
  } catch (err) {
    refund();
    // Its message may quote the notebook's text (an array's name): isolated when it has bidi controls.
    return { key, arrays: {}, error: `could not decode: ${contained((err as Error).message)}` };
  }
}

/** The model's saved chunks by key (none when the trait is missing or not an object). */
export function savedChunks(model: ModelHost): Record<string, EmbeddedChunk> {
  const saved = model.get("_saved");
  return typeof saved === "object" && saved !== null && !Array.isArray(saved) ? saved : {};
}
