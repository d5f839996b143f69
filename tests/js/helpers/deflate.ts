// Bytes as an exported page embeds them: deflate-raw, then base64 (docs/protocol.md, "The exported page").
export async function deflated(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  const z = new Uint8Array(await new Response(stream).arrayBuffer());
  let text = "";
  for (const b of z) text += String.fromCharCode(b);
  return btoa(text);
}
