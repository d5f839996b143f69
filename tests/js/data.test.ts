import { base64ToBytes, createChunkSource, decodeChunks, inflateBase64, splitConcatenated, toBytes, typedArray } from "../../js/data";
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
