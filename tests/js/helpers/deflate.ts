import type { Chunk, EmbeddedChunk } from "../../../js/wire/types";

// Bytes as an exported page embeds them: deflate-raw, then base64 (docs/protocol.md, "The exported page").
export async function deflated(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  const z = new Uint8Array(await new Response(stream).arrayBuffer());
  let text = "";
  for (const b of z) text += String.fromCharCode(b);
  return btoa(text);
}

/** A chunk as an exported page embeds it: its arrays' bytes one after another (each 8-byte aligned), deflated. */
export async function embedChunk(c: Chunk): Promise<EmbeddedChunk> {
  const list = Object.entries(c.arrays);
  let size = 0;
  const offsets = list.map(([, a]) => {
    size = Math.ceil(size / 8) * 8;
    const at = size;
    size += a.data.byteLength;
    return at;
  });
  const all = new Uint8Array(size);
  list.forEach(([, a], i) => all.set(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength), offsets[i]));
  return { arrays: list.map(([name, a]) => ({ name, dtype: a.dtype, shape: a.shape })), data: await deflated(all) };
}
