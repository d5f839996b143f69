// Module texts travel deflate-raw compressed and base64 encoded (in a page and in a widget's
// `_bundle`), as the chunks do. The build records each module's size, so inflating stops past
// it: a crafted text inflates to at most that many bytes, never gigabytes, before it is refused.

/** The UTF-8 text of deflate-raw, base64 `packed`; an error past `limit` bytes or on bad input. */
export async function unpackText(packed: string, limit: number): Promise<string> {
  const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
  const body = new Response(bytes).body;
  if (!body) throw new Error("this browser cannot stream bytes");
  const reader = body.pipeThrough(new DecompressionStream("deflate-raw") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>).getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel();
      throw new Error(`it inflates past the ${limit} bytes of attnscope's own module`);
    }
    parts.push(value);
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.length; }
  return new TextDecoder().decode(all);
}
