// Saved state is untrusted input (issue 40): each chunk is checked against its key's kind and
// `_meta` before use, and embedded chunks share one page-wide budget of decoded bytes. A
// mismatch is the chunk's error, shown by its view, never a throw or a view drawn from it.
import { decodeChunks } from "../../js/data";
import { createLedger, DECODE_BUDGET, pageLedger } from "../../js/decode_budget";
import { decodeEmbedded } from "../../js/saved";
import widget from "../../js/widget";
import { type ArrayShape, arraysProblem, checkChunk } from "../../js/wire/check_chunk";
import type { Chunk, Meta } from "../../js/wire/types";
import { installCanvas } from "./helpers/canvas";
import { deflated } from "./helpers/deflate";
import { makeFixture, mockModel, until } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

const served = (f: ReturnType<typeof makeFixture>, keys: string[]): Chunk[] => {
  const m = f.message(keys);
  return decodeChunks(m.content, m.buffers);
};

describe("chunks are checked against their key and _meta", () => {
  it("pass every chunk the protocol's fixture serves", () => {
    for (const fx of [{}, { topK: 3 }, { target: 4 }, { bias: true, kvHeads: 1, heads: 2 }, { topBlock: 16, tokens: 40 }]) {
      const f = makeFixture(fx);
      const keys = ["thumbs:self", "top:self:0", "top:self:1", "attn:self:0:1", "qk:self:1:0", ...("topBlock" in fx ? ["top:self:0:16", "top:self:0:32"] : [])];
      for (const c of served(f, keys)) expect(checkChunk(f.meta, c)).toBe(c);
    }
  });

  it("name the chunk's mismatch: renamed arrays, other dtypes, smaller or flattened shapes, keys past the stream", () => {
    const f = makeFixture({ layers: 2, heads: 3, tokens: 6 });
    const meta = f.meta;
    const problem = (key: string, arrays: { name: string; dtype: string | null; shape: number[] }[]) => arraysProblem(meta, key, arrays as ArrayShape[]);
    const top = [{ name: "weight", dtype: "u8", shape: [3, 6, 6] }, { name: "rowmax", dtype: "f32", shape: [3, 6] }];
    expect(problem("top:self:0", top)).toBeNull();
    expect(problem("top:self:0", [{ ...top[0]!, name: "weights" }, top[1]!])).toBe('it has no array "weight" (it has "weights", "rowmax")');
    expect(problem("top:self:0", [{ ...top[0]!, shape: [3, 5, 6] }, top[1]!])).toBe('its array "weight" has shape (3, 5, 6) where _meta gives (3, 6, 6)');
    expect(problem("top:self:0", [{ ...top[0]!, shape: [108] }, top[1]!])).toBe('its array "weight" has shape (108) where _meta gives (3, 6, 6)');
    expect(problem("top:self:0", [{ ...top[0]!, dtype: "f32" }, top[1]!])).toBe('its array "weight" is f32, not u8');
    expect(problem("attn:self:0:7", [])).toBe("head 7 is past the stream's 3 heads");
    expect(problem("top:self:9", top)).toBe("layer 9 is past the stream's 2 layers");
    expect(problem("top:nowhere:0", top)).toBe('the widget has no stream "nowhere"');
    expect(problem("thumbs:self", [{ name: "thumbs", dtype: "u8", shape: [2, 3, 6, 6] }])).toBeNull();
    expect(problem("diff/thumbs:self", [{ name: "thumbs", dtype: "u8", shape: [2, 3, 6, 6] }])).toBe('its array "thumbs" is u8, not i8');
    expect(problem("pixels:self", [])).toBe("the widget has no images");
    const withImages = { ...meta, images: { stream: "self", queries: [0], images: [{ height: 4, width: 5, grids: [] }] } } as Meta;
    expect(arraysProblem(withImages, "pixels:self", [{ name: "image0", dtype: null, shape: [4, 5, 3] }])).toBe('its array "image0" is null, not u8');
  });

  it("refuse an index past the stream's keys", () => {
    const f = makeFixture({ layers: 1, heads: 1, tokens: 4, topK: 2 });
    const [c] = served(f, ["top:self:0"]);
    (c!.arrays.index!.data as Uint16Array)[3] = 60000;
    expect(checkChunk(f.meta, c!).error).toBe("it does not match the widget's _meta: its array \"index\" holds 60000, past the stream's 4 keys");
  });

  it("check an embedded chunk's specs before inflating it, and a chunk that is not an object", async () => {
    const f = makeFixture({ layers: 1, heads: 1, tokens: 4 });
    const bomb = await deflated(new Uint8Array(64 * 1024 * 1024));
    const c = await decodeEmbedded("attn:self:0:0", { arrays: [{ name: "weight", dtype: "u8", shape: [8192, 8192] }, { name: "rowmax", dtype: "f32", shape: [8192] }], data: bomb }, f.meta);
    expect(c.error).toBe('it does not match the widget\'s _meta: its array "weight" has shape (8192, 8192) where _meta gives (4, 4)');
    expect((await decodeEmbedded("attn:self:0:0", 5 as never, f.meta)).error).toBe("could not decode: it is not an object");
    expect((await decodeEmbedded("attn:self:0:0", null as never, f.meta)).error).toBe("could not decode: it is not an object");
    expect((await decodeEmbedded("attn:self:0:0", { arrays: {} } as never, f.meta)).error).toBe("could not decode: its arrays are not a list");
    expect((await decodeEmbedded("attn:self:0:0", { arrays: [null] } as never, f.meta)).error).toBe("could not decode: an array of it has no name");
  });

  it("a view shows the mismatch as a message naming the chunk", async () => {
    const f = makeFixture({ layers: 2, heads: 3 });
    const data = await deflated(new Uint8Array(24));
    const saved = { "top:self:0": { arrays: [{ name: "w", dtype: "u8", shape: [24] }], data } };
    const model = mockModel(f, { _saved: saved });
    const el = document.createElement("div");
    document.body.append(el);
    widget.render({ model, el });
    await until(() => (el.querySelector('[data-testid="head-view"]')?.textContent ?? "").includes("does not match"));
    expect(el.textContent).toContain('Could not load the head view\'s lines of layer 0: it does not match the widget\'s _meta: it has no array "weight" (it has "w")');
  });
});

describe("a live widget's chunks", () => {
  it("are checked too: a kernel's chunk with other arrays is a message, not a throw", async () => {
    const f = makeFixture({ layers: 2, heads: 3 });
    const model = mockModel(f);
    model.send = (content: { type: string; keys: string[] }) => {
      const m = f.message(content.keys);
      for (const c of m.content.chunks) for (const a of c.arrays ?? []) a.name = `${a.name}s`;
      setTimeout(() => { for (const fn of model.handlers.get("msg:custom") ?? []) fn(m.content, m.buffers); }, 0);
    };
    const el = document.createElement("div");
    document.body.append(el);
    widget.render({ model, el });
    await until(() => (el.textContent ?? "").includes("does not match"));
    expect(el.textContent).toContain('it has no array "weight" (it has "weights", "rowmaxs")');
  });
});

describe("the page's budget of decoded bytes", () => {
  it("charges before inflating, refuses past the limit, and refunds a failed decode", async () => {
    const ledger = createLedger(100);
    const refund = ledger.charge(60);
    expect(() => ledger.charge(50)).toThrow(/would pass the page's budget/);
    expect(ledger.held).toBe(60);
    refund();
    refund();
    expect(ledger.held).toBe(0);
    const spec = { arrays: [{ name: "weight", dtype: "u8" as const, shape: [64] }], data: await deflated(new Uint8Array(64)) };
    const first = await decodeEmbedded("x", spec, undefined, ledger);
    expect(first.error).toBeUndefined();
    expect(ledger.held).toBe(64);
    const second = await decodeEmbedded("x", spec, undefined, ledger);
    expect(second.error).toMatch(/^could not decode: the page's widgets hold 64 bytes of decoded data already, and its 64 bytes would pass the page's budget of 100 bytes$/);
    const bad = await decodeEmbedded("x", { ...spec, data: await deflated(new Uint8Array(8)) }, undefined, createLedger(100));
    expect(bad.error).toMatch(/holds 8 bytes/);
    const l2 = createLedger(100);
    await decodeEmbedded("x", { ...spec, data: await deflated(new Uint8Array(8)) }, undefined, l2);
    expect(l2.held).toBe(0);
  });

  it("is one ledger per page, of 1.5 GiB", () => {
    expect(pageLedger()).toBe(pageLedger());
    expect(pageLedger().limit).toBe(DECODE_BUDGET);
    expect(DECODE_BUDGET).toBe(1.5 * 2 ** 30);
  });
});
