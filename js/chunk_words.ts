// A chunk key said in the words of the views (which view's data, of which layer
// and head), for messages: a reader never sees keys such as `qk:self:3:0`.
import { isolate } from "./label_text";
import { keyParts } from "./wire/keys";
import type { Meta } from "./wire/types";

const WHAT: Record<string, string> = {
  thumbs: "the model view's thumbnails",
  stats: "the head statistics",
  top: "the head view's lines",
  pseudo: "the mean and rollout lines",
  qk: "q and k",
  attn: "weights",
  image: "the image view's weights",
  pixels: "the pictures",
  tile: "the overview",
};

/**
 * `qk:self:3:0` → "q and k of layer 3 · head 0"; `top:self:2:64` → "the head view's
 * lines of layer 2 (rows 64…)". Layers are the model's numbers; a trace of several
 * streams names the stream. An unknown key is returned as it is.
 */
export function chunkWords(key: string, meta: Meta): string {
  const [kind = "", stream = "", layer, last] = keyParts(key);
  const what = WHAT[kind];
  const sm = meta.streams[stream];
  if (!what || !sm) return key;
  const of = Object.keys(meta.streams).length > 1 ? ` (${isolate(sm.label ?? stream)})` : "";
  if (layer === undefined || kind === "thumbs" || kind === "stats" || kind === "pixels") return `${what}${of}`;
  const number = sm.layers[Number(layer)] ?? layer;
  const where = kind === "qk" || kind === "attn" || kind === "tile" ? `layer ${number} · head ${last}` : `layer ${number}${last !== undefined ? ` (rows ${last}…)` : ""}`;
  return `${what} of ${where}${of}`;
}
