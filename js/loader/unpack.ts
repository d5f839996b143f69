// Module texts travel deflate-raw compressed and base64 encoded (in a page and in a widget's
// `_bundle`), as the chunks do. The build records each module's size, so inflating stops past
// it: a crafted text inflates to at most that many bytes, never gigabytes, before it is refused.

/** The UTF-8 text of deflate-raw, base64 `packed`; an error past `limit` bytes or on bad input. */
export async function unpackText(packed: string, limit: number): Promise<string> {
  const body = new Response(Uint8Array.from(atob(packed), (c) => c.charCodeAt(0))).body;
  if (!body) throw new Error("this browser cannot stream bytes");
  let total = 0;
  // Erroring the count cancels the inflation upstream: nothing past the limit is produced.
  const count = new TransformStream<Uint8Array, Uint8Array>({
    transform(part, out) {
      total += part.length;
      if (total > limit) out.error(new Error(`it inflates past the ${limit} bytes of attnscope's own module`));
      else out.enqueue(part);
    },
  });
  const inflate = new DecompressionStream("deflate-raw") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>;
  return new Response(body.pipeThrough(inflate).pipeThrough(count)).text();
}
