// Chunk decoding (protocol.md "Chunks" / "Messages") and a caching DataSource.
import type { ArraySpec, Chunk, DataSource, DType, NDArray, TypedArray } from "./wire/types";

export type { ArraySpec } from "./wire/types";

export type RawBuffer = DataView | Uint8Array | ArrayBuffer | string;

const ITEM_SIZE: Record<DType, number> = { i8: 1, u8: 1, u16: 2, u32: 4, f32: 4 };

/** Bytes of a base64 string. */
export function base64ToBytes(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A Uint8Array view of any buffer form the hosts deliver, honouring byteOffset/byteLength. */
export function toBytes(buf: RawBuffer): Uint8Array {
  if (typeof buf === "string") return base64ToBytes(buf);
  if (buf instanceof Uint8Array) return buf;
  if (ArrayBuffer.isView(buf)) return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  return new Uint8Array(buf);
}

/** A typed array over `bytes`; copied into fresh memory when the offset is not aligned. */
export function typedArray(dtype: DType, bytes: Uint8Array, count?: number): TypedArray {
  const size = ITEM_SIZE[dtype];
  if (size === undefined) throw new Error(`unknown dtype ${String(dtype)}`);
  const n = count ?? Math.floor(bytes.byteLength / size);
  if (n * size > bytes.byteLength) {
    throw new Error(`buffer holds ${bytes.byteLength} bytes, ${dtype} array needs ${n * size}`);
  }
  let src = bytes;
  if (size > 1 && src.byteOffset % size !== 0) src = bytes.slice(0, n * size);
  switch (dtype) {
    case "i8": return new Int8Array(src.buffer, src.byteOffset, n);
    case "u8": return new Uint8Array(src.buffer, src.byteOffset, n);
    case "u16": return new Uint16Array(src.buffer, src.byteOffset, n);
    case "u32": return new Uint32Array(src.buffer, src.byteOffset, n);
    case "f32": return new Float32Array(src.buffer, src.byteOffset, n);
  }
}

/** Relative rounding of a value stored as float16 (half an ulp: 2^-11). */
export const F16_ROUNDING = 2 ** -11;

let halfTable: Float32Array | null = null;
/** float32 of every float16 bit pattern (256 kB, built on first use). */
function halfToFloat(): Float32Array {
  if (halfTable) return halfTable;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    table[h] = exp === 0 ? sign * frac * 2 ** -24
      : exp === 31 ? (frac ? NaN : sign * Infinity)
        : sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  halfTable = table;
  return table;
}

/** Decode `count` shuffled float16 values (`count` high bytes, then `count` low bytes). */
export function unshuffleHalf(bytes: Uint8Array, count: number): Float32Array {
  if (bytes.byteLength < 2 * count) throw new Error(`shuffled float16 needs ${2 * count} bytes, got ${bytes.byteLength}`);
  const table = halfToFloat(), out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = table[((bytes[i] as number) << 8) | (bytes[count + i] as number)] as number;
  return out;
}

export function makeArray(spec: ArraySpec, bytes: Uint8Array): NDArray {
  const count = spec.shape.reduce((a, b) => a * b, 1);
  const out: NDArray = { dtype: spec.dtype, shape: spec.shape.slice(), data: typedArray(spec.dtype, bytes, count) };
  if (spec.rounding) out.rounding = spec.rounding; // the page host passes on what float16 cost
  return out;
}

interface WireArray extends ArraySpec { buffer: number }
/** A whole chunk (`arrays` name their buffers), an error, or one part of a chunk too large for one message. */
export interface WireChunk { key: string; arrays?: WireArray[] | ArraySpec[]; error?: string; part?: number; parts?: number; buffer?: number }
export interface ChunksMessage { type: "chunks"; chunks: WireChunk[] }

export function isChunksMessage(content: unknown): content is ChunksMessage {
  return typeof content === "object" && content !== null && (content as { type?: unknown }).type === "chunks";
}

/** Decode a `{type: "chunks"}` message with its buffers into chunks (bad entries become errors). */
export function decodeChunks(msg: ChunksMessage, buffers: readonly RawBuffer[]): Chunk[] {
  return msg.chunks.map((c) => {
    if (c.error !== undefined) return { key: c.key, arrays: {}, error: c.error };
    try {
      const arrays: Record<string, NDArray> = {};
      for (const a of (c.arrays ?? []) as WireArray[]) {
        const raw = buffers[a.buffer];
        if (raw === undefined) throw new Error(`buffer ${a.buffer} missing for ${a.name}`);
        arrays[a.name] = makeArray(a, toBytes(raw));
      }
      return { key: c.key, arrays };
    } catch (e) {
      return { key: c.key, arrays: {}, error: `could not decode: ${(e as Error).message}` };
    }
  });
}

/**
 * A stateful `decodeChunks` that also joins parts: a chunk larger than one
 * message (Python caps them at a few MB, for VS Code) comes as `parts`
 * messages, each a slice of its arrays' 8-byte aligned concatenation, in order;
 * the chunk is decoded when its last part arrives.
 */
export function createChunkDecoder(): (msg: ChunksMessage, buffers: readonly RawBuffer[]) => Chunk[] {
  const pending = new Map<string, Uint8Array[]>();
  const joinPart = (c: WireChunk, buffers: readonly RawBuffer[]): Chunk[] => {
    const { key, part = 0, parts = 1 } = c;
    const pieces = part === 0 ? [] : pending.get(key);
    const raw = buffers[c.buffer ?? 0];
    if (!pieces || pieces.length !== part || raw === undefined) {
      pending.delete(key);
      return [{ key, arrays: {}, error: `could not decode: part ${part} of ${parts} arrived without the ones before it` }];
    }
    pieces.push(toBytes(raw).slice()); // hosts may reuse a message's buffers
    if (part < parts - 1) { pending.set(key, pieces); return []; }
    pending.delete(key);
    const joined = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
    let offset = 0;
    for (const p of pieces) { joined.set(p, offset); offset += p.byteLength; }
    try {
      return [{ key, arrays: splitConcatenated((c.arrays ?? []) as ArraySpec[], joined) }];
    } catch (e) {
      return [{ key, arrays: {}, error: `could not decode: ${(e as Error).message}` }];
    }
  };
  return (msg, buffers) => msg.chunks.flatMap((c) =>
    c.parts !== undefined && c.error === undefined ? joinPart(c, buffers) : decodeChunks({ type: "chunks", chunks: [c] }, buffers));
}

/** Split the concatenated bytes of an embedded chunk (each array starts 8-byte aligned). */
export function splitConcatenated(specs: ArraySpec[], bytes: Uint8Array): Record<string, NDArray> {
  const arrays: Record<string, NDArray> = {};
  let offset = 0;
  for (const spec of specs) {
    offset = Math.ceil(offset / 8) * 8;
    const count = spec.shape.reduce((a, b) => a * b, 1);
    const half = spec.encoding === "f16-shuffled";
    if (spec.encoding !== undefined && !half) throw new Error(`${spec.name} has unknown encoding ${spec.encoding}`);
    const len = count * (half ? 2 : ITEM_SIZE[spec.dtype]);
    if (offset + len > bytes.byteLength) throw new Error(`${spec.name} needs bytes ${offset}..${offset + len}, the chunk has ${bytes.byteLength}`);
    const part = bytes.subarray(offset, offset + len);
    arrays[spec.name] = half
      ? { dtype: spec.dtype, shape: spec.shape.slice(), data: unshuffleHalf(part, count), rounding: F16_ROUNDING }
      : makeArray(spec, part);
    offset += len;
  }
  return arrays;
}

/** The most bytes one embedded chunk may decode to (its specs' claim is checked against it). */
export const MAX_CHUNK_BYTES = 2 ** 30;

/**
 * The bytes `splitConcatenated` reads for `specs` (each array 8-byte aligned), checked before
 * anything is inflated: shapes of non-negative whole numbers, a known dtype and encoding, and
 * at most `MAX_CHUNK_BYTES` in all. Saved state and pages are untrusted input (a crafted
 * notebook must not make the reader allocate what its data cannot back).
 */
export function embeddedBytes(specs: ArraySpec[]): number {
  let offset = 0;
  for (const spec of specs) {
    const half = spec.encoding === "f16-shuffled";
    const item = half ? 2 : ITEM_SIZE[spec.dtype];
    if (item === undefined) throw new Error(`${spec.name} has unknown dtype ${String(spec.dtype)}`);
    if (spec.encoding !== undefined && !half) throw new Error(`${spec.name} has unknown encoding ${spec.encoding}`);
    if (!Array.isArray(spec.shape) || !spec.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new Error(`${spec.name} has shape ${JSON.stringify(spec.shape)}: not a list of whole numbers ≥ 0`);
    }
    offset = Math.ceil(offset / 8) * 8 + spec.shape.reduce((a, b) => a * b, 1) * item;
    if (offset > MAX_CHUNK_BYTES) throw new Error(`its arrays would take more than ${MAX_CHUNK_BYTES} bytes`);
  }
  return offset;
}

/**
 * Inflate base64 deflate-raw (the exported page's chunk encoding), stopping as soon as the
 * output passes `limit` bytes: a deflate bomb ends in an error, not in gigabytes.
 */
export async function inflateBase64(text: string, limit = MAX_CHUNK_BYTES): Promise<Uint8Array> {
  const input = base64ToBytes(text);
  const source = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(input); c.close(); } });
  const reader = source.pipeThrough(new DecompressionStream("deflate-raw") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>).getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      void reader.cancel();
      throw new Error(`it inflates past the ${limit} bytes its arrays need`);
    }
    parts.push(value);
  }
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.byteLength; }
  return out;
}

export interface ChunkSource extends DataSource {
  /** Feed chunks that arrived (from a message or the page). */
  receive(chunks: Chunk[]): void;
  /** Stop waiting: pending requests resolve with an error. */
  dispose(): void;
}

export function chunkBytes(c: Chunk): number {
  let n = 0;
  for (const a of Object.values(c.arrays)) n += a.data.byteLength;
  return n;
}

/** What a view says when the kernel cannot be reached (its send threw, e.g. after a restart). */
export const KERNEL_LOST = "kernel connection lost — re-run the cell";

/** What a view says when a request got no answer in `timeoutMs`. */
export function noAnswer(timeoutMs: number): string {
  return `no answer from the kernel in ${Math.round(timeoutMs / 1000)} s: it is busy, or the ${KERNEL_LOST}`;
}

/**
 * A DataSource over a `send(keys)` transport: caches chunks (least recently
 * used evicted past `budgetBytes`), joins concurrent requests for the same key,
 * and resolves every asked-for key (errors included). Nothing stays pending:
 * a send that throws settles its keys at once with KERNEL_LOST, and a request
 * with no answer settles after `timeoutMs`; a later request asks again.
 */
export function createChunkSource(send: (keys: string[]) => void, timeoutMs = 30_000, budgetBytes = 768 * 2 ** 20): ChunkSource {
  const cache = new Map<string, Chunk>(); // insertion order = recency
  let cached = 0;
  const touch = (key: string): Chunk | undefined => {
    const c = cache.get(key);
    if (c) { cache.delete(key); cache.set(key, c); }
    return c;
  };
  const store = (c: Chunk): void => {
    const old = cache.get(c.key);
    if (old) { cached -= chunkBytes(old); cache.delete(c.key); }
    cache.set(c.key, c);
    cached += chunkBytes(c);
    for (const [k, v] of cache) {
      if (cached <= budgetBytes || k === c.key) break;
      cache.delete(k);
      cached -= chunkBytes(v);
    }
  };
  const waiting = new Map<string, ((c: Chunk) => void)[]>();
  const timers = new Set<ReturnType<typeof setTimeout>>();

  const settle = (chunk: Chunk): void => {
    if (!chunk.error) store(chunk);
    const fns = waiting.get(chunk.key);
    waiting.delete(chunk.key);
    for (const fn of fns ?? []) fn(chunk);
  };

  return {
    peek: touch,
    receive(chunks) {
      for (const c of chunks) settle(c);
    },
    dispose() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const key of [...waiting.keys()]) settle({ key, arrays: {}, error: "widget closed" });
    },
    request(keys) {
      const out = new Map<string, Chunk>();
      const missing: string[] = [];
      const promises: Promise<void>[] = [];
      for (const key of new Set(keys)) {
        const hit = touch(key);
        if (hit) { out.set(key, hit); continue; }
        let list = waiting.get(key);
        if (!list) { list = []; waiting.set(key, list); missing.push(key); }
        const l = list;
        promises.push(new Promise<void>((resolve) => l.push((c) => { out.set(key, c); resolve(); })));
      }
      if (missing.length) {
        const fail = (error: string): void => {
          for (const key of missing) if (waiting.has(key)) settle({ key, arrays: {}, error });
        };
        // The timer starts first: whatever send does, these keys cannot wait forever.
        const t = setTimeout(() => { timers.delete(t); fail(noAnswer(timeoutMs)); }, timeoutMs);
        timers.add(t);
        try {
          send(missing);
        } catch {
          clearTimeout(t);
          timers.delete(t);
          fail(KERNEL_LOST);
        }
      }
      return Promise.all(promises).then(() => out);
    },
  };
}

/** A typed element accessor that fails loudly instead of returning undefined. */
export function arr(chunk: Chunk, name: string): NDArray {
  const a = chunk.arrays[name];
  if (!a) throw new Error(`chunk ${chunk.key} has no array "${name}"`);
  return a;
}
