// Pages that derive (protocol.md): the page host computes `attn:` and `top:` chunks
// from `qk:` chunks in the formats Python sends, and checks against row maxima.
import { attnFromQk, qkParts, rowWeights, topFromQk } from "../../js/derive";
import { createPageHost, type EmbeddedChunk } from "../../js/host";
import type { Chunk, NDArray } from "../../js/wire/types";
import { neuronRows } from "../../js/views/neuron/neuron_rows";

const f32 = (shape: number[], values: number[]): NDArray => ({ dtype: "f32", shape, data: Float32Array.from(values) });

/** A head with 3 queries, 4 keys, head size 2; optional mask (causal), bias, softcap and sink. */
function qkChunk(opts: { mask?: boolean; spans?: boolean; bias?: boolean; softcap?: number; sink?: number; seed?: number } = {}): Chunk {
  const s = opts.seed ?? 1;
  const q = [0.3, -1.2, 1.1, 0.4, -0.7, 0.9].map((v) => v * s);
  const k = [1.0, 0.2, -0.5, 1.3, 0.8, -0.4, 0.1, 0.1];
  const arrays: Record<string, NDArray> = { q: f32([3, 2], q), k: f32([4, 2], k), scaling: f32([1], [0.7]) };
  if (opts.mask) arrays.mask = { dtype: "u8", shape: [3, 4], data: Uint8Array.from([0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1]) };
  // Spans: query 0 sees key 1 only, query 1 keys 0–2, query 2 keys 2–3 (padding, a window).
  if (opts.spans) arrays.spans = { dtype: "u32", shape: [3, 2], data: Uint32Array.from([1, 2, 0, 3, 2, 4]) };
  if (opts.bias) arrays.bias = f32([3, 4], [0.1, -0.2, 0.3, 0, 0.5, 0.5, -1, 2, 0, 0, 0, 0.25]);
  if (opts.softcap) arrays.softcap = f32([1], [opts.softcap]);
  if (opts.sink != null) arrays.sink = f32([1], [opts.sink]);
  return { key: "qk:self:0:0", arrays };
}

/** The weights written out: softmax over unmasked keys of softcap(q·k·scale + bias), a sink in the denominator. */
function expected(c: Chunk, i: number): number[] {
  const p = qkParts(c);
  const scores = Array.from({ length: p.K }, (_, j) => {
    let s = (p.q[i * 2]! * p.k[j * 2]! + p.q[i * 2 + 1]! * p.k[j * 2 + 1]!) * p.scaling;
    if (p.bias) s += p.bias[i * p.K + j]!;
    return p.softcap ? p.softcap * Math.tanh(s / p.softcap) : s;
  });
  const outside = (j: number): boolean => !!p.spans && (j < p.spans[2 * i]! || j >= p.spans[2 * i + 1]!);
  const e = scores.map((s, j) => (p.mask?.[i * p.K + j] || outside(j) ? 0 : Math.exp(s)));
  const z = e.reduce((a, b) => a + b, 0) + (p.sink != null ? Math.exp(p.sink) : 0);
  return e.map((v) => (z > 0 ? v / z : 0)); // a query that sees no key: a row of zeros
}

describe("rowWeights", () => {
  for (const opts of [{}, { mask: true }, { bias: true, softcap: 1.5 }, { mask: true, sink: 0.4 }, { spans: true }, { spans: true, mask: true, bias: true, softcap: 2 }]) {
    it(`computes softmax of the model's score (${JSON.stringify(opts)})`, () => {
      const c = qkChunk(opts), p = qkParts(c);
      for (let i = 0; i < 3; i++) {
        const got = Array.from(rowWeights(p, i, new Float64Array(4)));
        expected(c, i).forEach((w, j) => expect(got[j]).toBeCloseTo(w, 12));
      }
    });
  }

  it("treats a sink of -inf as no sink (a layer without one)", () => {
    const a = rowWeights(qkParts(qkChunk({ sink: -Infinity })), 1, new Float64Array(4));
    expect(a.reduce((x, y) => x + y, 0)).toBeCloseTo(1, 12);
  });
});

describe("attnFromQk", () => {
  it("quantises each row as protocol.md says: round(255 w / rowmax)", () => {
    const c = qkChunk({ mask: true, bias: true });
    const a = attnFromQk("attn:self:0:0", c);
    expect(a.arrays.weight!.shape).toEqual([3, 4]);
    for (let i = 0; i < 3; i++) {
      const w = expected(c, i), max = Math.max(...w);
      expect(a.arrays.rowmax!.data[i]).toBeCloseTo(max, 6);
      w.forEach((v, j) => expect(a.arrays.weight!.data[i * 4 + j]).toBe(Math.round((255 * v) / max)));
    }
    expect(a.arrays.weight!.data[1]).toBe(0); // masked
  });
});

describe("topFromQk", () => {
  it("keeps every key in key order, with no index, when top_k covers them (as Python)", () => {
    const heads = [qkChunk({ seed: 1 }), qkChunk({ seed: -2 })];
    const t = topFromQk("top:self:0", heads, 64);
    expect(t.arrays.index).toBeUndefined();
    expect(t.arrays.weight!.shape).toEqual([2, 3, 4]);
    const single = attnFromQk("x", heads[1]!);
    expect(Array.from(t.arrays.weight!.data.subarray(12))).toEqual(Array.from(single.arrays.weight!.data));
  });

  it("keeps each row's strongest keys, strongest first, with their indices", () => {
    const c = qkChunk({ bias: true });
    const t = topFromQk("top:self:0", [c], 2);
    expect(t.arrays.index!.dtype).toBe("u16");
    expect(t.arrays.weight!.shape).toEqual([1, 3, 2]);
    for (let i = 0; i < 3; i++) {
      const w = expected(c, i), max = Math.max(...w);
      const order = w.map((v, j) => [v, j] as const).sort((x, y) => y[0] - x[0]);
      expect(Array.from(t.arrays.index!.data.subarray(i * 2, i * 2 + 2))).toEqual([order[0]![1], order[1]![1]]);
      expect(t.arrays.weight!.data[i * 2]).toBe(255);
      expect(t.arrays.weight!.data[i * 2 + 1]).toBe(Math.round((255 * order[1]![0]) / max));
      expect(t.arrays.rowmax!.data[i]).toBeCloseTo(max, 6);
    }
  });

  it("refuses heads of different shapes", () => {
    const small: Chunk = { key: "qk", arrays: { q: f32([1, 2], [1, 1]), k: f32([1, 2], [1, 1]) } };
    expect(() => topFromQk("top:self:0", [qkChunk(), small], 4)).toThrow(/head 1 is 1×1/);
  });
});

describe("neuron rows in a page that derives", () => {
  it("check the row's largest weight against the recorded row maximum", () => {
    const c = qkChunk({ mask: true });
    const rowmax = [0, 1, 2].map((i) => Math.max(...expected(c, i)));
    const good = neuronRows({ ...c, arrays: { ...c.arrays, rowmax: f32([3], rowmax) } }, 1);
    expect(good.checkedBy).toBe("rowmax");
    expect(good.recomputeError).toBeLessThanOrEqual(good.recordedTolerance);
    const bad = neuronRows({ ...c, arrays: { ...c.arrays, rowmax: f32([3], rowmax.map((m) => m * 0.9)) } }, 1);
    expect(bad.recomputeError).toBeGreaterThan(bad.recordedTolerance);
  });
});

describe("page host", () => {
  /** An embedded chunk as save_html writes it: arrays concatenated 8-byte aligned, deflate-raw, base64. */
  async function embed(c: Chunk): Promise<EmbeddedChunk> {
    const list = Object.entries(c.arrays);
    let size = 0;
    const offsets = list.map(([, a]) => { size = Math.ceil(size / 8) * 8; const o = size; size += a.data.byteLength; return o; });
    const all = new Uint8Array(size);
    list.forEach(([, a], i) => all.set(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength), offsets[i]));
    const z = new Uint8Array(await new Response(new Blob([all]).stream().pipeThrough(new CompressionStream("deflate-raw"))).arrayBuffer());
    return { arrays: list.map(([name, a]) => ({ name, dtype: a.dtype, shape: a.shape })), data: btoa(String.fromCharCode(...z)) };
  }

  function ask(host: ReturnType<typeof createPageHost>, key: string): Promise<{ key: string; error?: string; arrays?: { name: string }[] }> {
    return new Promise((resolve) => {
      host.on("msg:custom", (msg: { chunks: { key: string; error?: string; arrays?: { name: string }[] }[] }) => {
        const c = msg.chunks.find((x) => x.key === key);
        if (c) resolve(c);
      });
      host.send({ type: "request", keys: [key] });
    });
  }

  const meta = { streams: { self: { num_heads: 2, top_k: 2, q_len: 3, k_len: 4 } } };
  /** A qk: chunk as a page that derives writes it: with each row's largest weight. */
  const withRowmax = (c: Chunk): Chunk => ({ ...c, arrays: { ...c.arrays, rowmax: f32([3], [0, 1, 2].map((i) => Math.max(...expected(c, i)))) } });

  it("computes a left-out top: chunk from every head's qk: chunk, and attn: from its head's", async () => {
    const heads = [withRowmax(qkChunk({ seed: 1 })), withRowmax(qkChunk({ seed: 3 }))];
    const host = createPageHost({ _meta: meta }, { "qk:self:0:0": await embed(heads[0]!), "qk:self:0:1": await embed(heads[1]!) });
    const top = await ask(host, "top:self:0");
    expect(top.error).toBeUndefined();
    expect(top.arrays!.map((a) => a.name).sort()).toEqual(["index", "rowmax", "weight"]);
    expect(Array.from(host.decoded.get("top:self:0")!.arrays.weight!.data))
      .toEqual(Array.from(topFromQk("t", heads, 2).arrays.weight!.data));
    const attn = await ask(host, "attn:self:0:1");
    expect(attn.error).toBeUndefined();
  });

  it("computes a block of query rows the page offers (top:<s>:<l>:<first>), equal to those rows of the layer", async () => {
    const heads = [withRowmax(qkChunk({ seed: 1, spans: true })), withRowmax(qkChunk({ seed: 3, spans: true }))];
    const blocks = { streams: { self: { ...meta.streams.self, top_block: 2 } } };
    const host = createPageHost({ _meta: blocks }, { "qk:self:0:0": await embed(heads[0]!), "qk:self:0:1": await embed(heads[1]!) });
    const whole = topFromQk("t", heads, 2);
    for (const [first, rows] of [[0, 2], [2, 1]] as const) {
      const key = `top:self:0:${first}`;
      expect((await ask(host, key)).error).toBeUndefined();
      const got = host.decoded.get(key)!.arrays;
      expect(got.weight!.shape).toEqual([2, rows, 2]);
      for (const name of ["weight", "index", "rowmax"] as const) {
        const per = name === "rowmax" ? 1 : 2, w = whole.arrays[name]!.data, b = got[name]!.data;
        for (let h = 0; h < 2; h++) {
          expect(Array.from(b.subarray(h * rows * per, (h + 1) * rows * per)))
            .toEqual(Array.from(w.subarray((h * 3 + first) * per, (h * 3 + first + rows) * per)));
        }
      }
    }
    // Only the blocks it offers: a first row off the block grid, or past the last row, is not there.
    expect((await ask(host, "top:self:0:1")).error).toMatch(/not included/);
    expect((await ask(host, "top:self:0:4")).error).toMatch(/not included/);
  });

  it("computes nothing from a page that was not written to derive (its q/k carry no row maxima)", async () => {
    const plain = qkChunk();
    const host = createPageHost({ _meta: { streams: { self: { num_heads: 1, top_k: 2 } } } }, { "qk:self:0:0": await embed(plain) });
    expect((await ask(host, "attn:self:0:0")).error).toMatch(/not included/);
    expect((await ask(host, "top:self:0")).error).toMatch(/not included/);
  });

  it("says a chunk was left out when the qk: chunks it needs are not all there", async () => {
    const host = createPageHost({ _meta: meta }, { "qk:self:0:0": await embed(withRowmax(qkChunk())) });
    expect((await ask(host, "top:self:0")).error).toMatch(/not included in this exported page/);
    expect((await ask(host, "attn:self:1:0")).error).toMatch(/not included/);
  });
});
