import { base64ToBytes, createChunkDecoder, createChunkSource, decodeChunks, inflateBase64, KERNEL_LOST, noAnswer, splitConcatenated, toBytes, typedArray } from "../../js/data";
import { createStore } from "../../js/state";

function b64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

describe("toBytes / typedArray", () => {
  const f32 = Float32Array.of(1.5, -2.25, 3e-8, 1e6);
  const raw = new Uint8Array(f32.buffer);

  it("gives the same floats from DataView (odd offset), Uint8Array, ArrayBuffer and base64", () => {
    const big = new Uint8Array(raw.length + 5);
    big.set(raw, 3);
    const forms = [new DataView(big.buffer, 3, raw.length), big.subarray(3, 3 + raw.length), raw.slice().buffer, b64(raw)];
    for (const form of forms) {
      const a = typedArray("f32", toBytes(form), 4);
      expect(a).toBeInstanceOf(Float32Array);
      expect(Array.from(a)).toEqual(Array.from(f32));
    }
  });

  it("respects byteOffset/byteLength of a DataView", () => {
    const buf = new Uint8Array([9, 9, 1, 2, 3, 9]).buffer;
    expect(Array.from(toBytes(new DataView(buf, 2, 3)))).toEqual([1, 2, 3]);
  });

  it("decodes u16 and u32 at aligned and unaligned offsets", () => {
    const u16 = Uint16Array.of(1, 65535, 300);
    const u32 = Uint32Array.of(7, 4294967295);
    for (const off of [0, 1, 2, 4]) {
      const b = new Uint8Array(off + 8);
      b.set(new Uint8Array(u16.buffer), off);
      expect(Array.from(typedArray("u16", new Uint8Array(b.buffer, off, 6)))).toEqual([1, 65535, 300]);
      b.set(new Uint8Array(u32.buffer), off);
      expect(Array.from(typedArray("u32", new Uint8Array(b.buffer, off, 8)))).toEqual([7, 4294967295]);
    }
  });

  it("refuses a buffer too short for the shape", () => {
    expect(() => typedArray("f32", new Uint8Array(7), 2)).toThrow(/needs 8/);
  });

  it("decodes base64", () => {
    expect(Array.from(base64ToBytes(btoa("\x00\x01\xff")))).toEqual([0, 1, 255]);
  });
});

describe("decodeChunks", () => {
  it("builds named arrays and turns errors and bad buffers into error chunks", () => {
    const msg = {
      type: "chunks" as const,
      chunks: [
        { key: "a", arrays: [{ name: "x", dtype: "u16" as const, shape: [2, 2], buffer: 0 }] },
        { key: "b", error: "no such layer" },
        { key: "c", arrays: [{ name: "y", dtype: "f32" as const, shape: [4], buffer: 5 }] },
      ],
    };
    const [a, b, c] = decodeChunks(msg, [new Uint8Array(new Uint16Array([1, 2, 3, 4]).buffer)]);
    expect(Array.from(a!.arrays.x!.data)).toEqual([1, 2, 3, 4]);
    expect(a!.arrays.x!.shape).toEqual([2, 2]);
    expect(b!.error).toBe("no such layer");
    expect(c!.error).toMatch(/buffer 5 missing/);
  });
});

describe("embedded chunks", () => {
  it("splits 8-byte aligned concatenations and inflates deflate-raw base64", async () => {
    const u8 = Uint8Array.of(1, 2, 3);
    const f = Float32Array.of(0.5, -1);
    const cat = new Uint8Array(16);
    cat.set(u8, 0);
    cat.set(new Uint8Array(f.buffer), 8);
    const cs = new Blob([cat]).stream().pipeThrough(new CompressionStream("deflate-raw"));
    const z = new Uint8Array(await new Response(cs).arrayBuffer());
    const back = await inflateBase64(b64(z));
    const arrays = splitConcatenated([{ name: "a", dtype: "u8", shape: [3] }, { name: "b", dtype: "f32", shape: [2] }], back);
    expect(Array.from(arrays.a!.data)).toEqual([1, 2, 3]);
    expect(Array.from(arrays.b!.data)).toEqual([0.5, -1]);
  });
});

describe("shuffled float16 (the exported page's q and k)", () => {
  // float16 of 1, -2, 65504, 2^-24 (smallest subnormal), 0.1 (0x2e66): high bytes, then low bytes.
  const halves = [0x3c00, 0xc000, 0x7bff, 0x0001, 0x2e66];
  const shuffled = Uint8Array.from([...halves.map((h) => h >> 8), ...halves.map((h) => h & 0xff)]);

  it("decodes every kind of value, after an array it is aligned behind", () => {
    const bytes = new Uint8Array(8 + shuffled.length);
    bytes.set([7, 8, 9], 0);
    bytes.set(shuffled, 8);
    const arrays = splitConcatenated([
      { name: "a", dtype: "u8", shape: [3] },
      { name: "q", dtype: "f32", shape: [5], encoding: "f16-shuffled" },
    ], bytes);
    expect(Array.from(arrays.a!.data)).toEqual([7, 8, 9]);
    expect(Array.from(arrays.q!.data)).toEqual([1, -2, 65504, 2 ** -24, Math.fround(0.0999755859375)]);
    expect(arrays.q!.dtype).toBe("f32");
    expect(arrays.q!.rounding).toBe(2 ** -11);
    expect(arrays.a!.rounding).toBeUndefined();
  });

  it("refuses an encoding it does not know, and too few bytes", () => {
    expect(() => splitConcatenated([{ name: "q", dtype: "f32", shape: [1], encoding: "zstd" }], new Uint8Array(8))).toThrow(/unknown encoding zstd/);
    expect(() => splitConcatenated([{ name: "q", dtype: "f32", shape: [9], encoding: "f16-shuffled" }], shuffled)).toThrow(/needs bytes 0..18/);
  });
});

describe("createChunkSource", () => {
  it("joins concurrent requests, caches, and resolves errors", async () => {
    const sent: string[][] = [];
    const src = createChunkSource((keys) => sent.push(keys));
    const p1 = src.request(["x", "y"]);
    const p2 = src.request(["x"]);
    expect(sent).toEqual([["x", "y"]]);
    src.receive([{ key: "x", arrays: {} }, { key: "y", arrays: {}, error: "nope" }]);
    const [m1, m2] = await Promise.all([p1, p2]);
    expect(m1.get("y")!.error).toBe("nope");
    expect(m2.get("x")!.error).toBeUndefined();
    expect(src.peek("x")).toBeDefined();
    expect(src.peek("y")).toBeUndefined(); // errors are not cached: a retry asks again
    await src.request(["x"]);
    expect(sent.length).toBe(1);
  });

  it("times out and disposes with errors instead of hanging", async () => {
    vi.useFakeTimers();
    const src = createChunkSource(() => undefined, 50);
    const p = src.request(["slow"]);
    vi.advanceTimersByTime(60);
    expect((await p).get("slow")!.error).toMatch(/no answer/);
    vi.useRealTimers();
    const src2 = createChunkSource(() => undefined);
    const p2 = src2.request(["z"]);
    src2.dispose();
    expect((await p2).get("z")!.error).toMatch(/closed/);
  });
});

describe("createStore", () => {
  it("notifies only real changes (arrays compared by value)", () => {
    const s = createStore({ a: 1, list: [1, 2] });
    const seen: string[][] = [];
    const un = s.subscribe((ch) => seen.push([...ch] as string[]));
    s.set({ a: 1, list: [1, 2] });
    s.set({ list: [2] });
    un();
    s.set({ a: 5 });
    expect(seen).toEqual([["list"]]);
    expect(s.get().a).toBe(5);
  });
});

describe("chunk cache budget", () => {
  it("evicts the least recently used chunks past the budget", async () => {
    const sent: string[][] = [];
    const src = createChunkSource((keys) => sent.push(keys), 1000, 250);
    const mk = (key: string) => ({ key, arrays: { a: { dtype: "u8" as const, shape: [100], data: new Uint8Array(100) } } });
    src.receive([mk("a"), mk("b")]);
    expect(src.peek("a")).toBeDefined(); // a is now the most recent
    src.receive([mk("c")]);
    expect(src.peek("b")).toBeUndefined();
    expect(src.peek("a")).toBeDefined();
    expect(src.peek("c")).toBeDefined();
  });
});

describe("a lost kernel is said, not hung", () => {
  it("settles at once with KERNEL_LOST when send throws, and a later request asks again", async () => {
    vi.useFakeTimers();
    let calls = 0;
    const src = createChunkSource(() => { calls++; throw new Error("Cannot send"); });
    const first = await src.request(["top:self:4"]);
    expect(first.get("top:self:4")!.error).toBe(KERNEL_LOST);
    expect(vi.getTimerCount()).toBe(0); // no timer left behind for the settled keys
    const again = await src.request(["top:self:4", "thumbs:self"]);
    expect(calls).toBe(2); // not joined to a dead wait
    expect(again.get("thumbs:self")!.error).toBe(KERNEL_LOST);
    vi.useRealTimers();
  });

  it("settles a silent send after the timeout, says why, and leaves nothing pending", async () => {
    vi.useFakeTimers();
    const sent: string[][] = [];
    const src = createChunkSource((keys) => sent.push(keys), 5000);
    const p = src.request(["top:self:4"]);
    const joined = src.request(["top:self:4"]);
    vi.advanceTimersByTime(5001);
    const [m, j] = await Promise.all([p, joined]);
    expect(m.get("top:self:4")!.error).toBe(noAnswer(5000));
    expect(j.get("top:self:4")!.error).toMatch(/kernel connection lost — re-run the cell/);
    expect(vi.getTimerCount()).toBe(0);
    const retry = src.request(["top:self:4"]);
    expect(sent).toEqual([["top:self:4"], ["top:self:4"]]);
    src.receive([{ key: "top:self:4", arrays: {} }]);
    expect((await retry).get("top:self:4")!.error).toBeUndefined();
    vi.useRealTimers();
  });

  it("the default timeout is seconds, not minutes", async () => {
    vi.useFakeTimers();
    const src = createChunkSource(() => undefined);
    const p = src.request(["k"]);
    vi.advanceTimersByTime(30_001);
    expect((await p).get("k")!.error).toMatch(/no answer from the kernel in 30 s/);
    vi.useRealTimers();
  });
});

describe("chunks in parts", () => {
  const u8 = Uint8Array.of(1, 2, 3);
  const f = Float32Array.of(0.5, -1, 7);
  const cat = new Uint8Array(20);
  cat.set(u8, 0);
  cat.set(new Uint8Array(f.buffer), 8);
  const specs = [{ name: "w", dtype: "u8" as const, shape: [3] }, { name: "q", dtype: "f32" as const, shape: [3] }];
  const part = (i: number, n: number) => ({ type: "chunks" as const, chunks: [{ key: "attn:self:0:0", part: i, parts: n, buffer: 0, arrays: specs }] });

  it("joins the slices of a chunk when its last part arrives, in any buffer form", () => {
    const decode = createChunkDecoder();
    // Colab hands buffers over as Uint8Array, JupyterLab as DataView (with an offset here).
    const padded = new Uint8Array(30);
    padded.set(cat.subarray(7, 14), 5);
    expect(decode(part(0, 3), [cat.slice(0, 7)])).toEqual([]);
    expect(decode(part(1, 3), [new DataView(padded.buffer, 5, 7)])).toEqual([]);
    const [c] = decode(part(2, 3), [cat.slice(14).buffer]);
    expect(c!.error).toBeUndefined();
    expect(Array.from(c!.arrays.w!.data)).toEqual([1, 2, 3]);
    expect(Array.from(c!.arrays.q!.data)).toEqual([0.5, -1, 7]);
  });

  it("passes whole chunks and errors through, and refuses a part without its predecessors", () => {
    const decode = createChunkDecoder();
    const whole = decode({ type: "chunks", chunks: [{ key: "a", arrays: [{ name: "x", dtype: "u8", shape: [2], buffer: 0 }] }, { key: "b", error: "no" }] }, [Uint8Array.of(4, 5)]);
    expect(Array.from(whole[0]!.arrays.x!.data)).toEqual([4, 5]);
    expect(whole[1]!.error).toBe("no");
    expect(decode(part(1, 2), [cat.slice(10)])[0]!.error).toMatch(/without the ones before it/);
    expect(decode(part(0, 2), [cat.slice(0, 10)])).toEqual([]);
    expect(decode(part(1, 2), [cat.slice(10, 12)])[0]!.error).toMatch(/could not decode/); // too short
  });
});
