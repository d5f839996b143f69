import { createChunkSource, decodeChunks } from "../../js/data";
import { blockRowsOf, blocksAhead, blocksOf, layerRows, tokenRange } from "../../js/views/head/head_blocks";
import { topRowsOf } from "../../js/views/head/head_lines";
import type { StreamMeta } from "../../js/wire/types";
import { makeFixture, until } from "./helpers/fixture";

describe("which blocks a draw needs", () => {
  it("blocks of row ranges: every block touched, clamped to the rows there are", () => {
    expect(blocksOf([[0, 0]], 8, 40)).toEqual([0]);
    expect(blocksOf([[7, 8]], 8, 40)).toEqual([0, 8]);
    expect(blocksOf([[30, 35], [3, 3], [31, 31]], 8, 40)).toEqual([0, 24, 32]);
    expect(blocksOf([[-4, 100]], 16, 40)).toEqual([0, 16, 32]);
    expect(blocksOf([[50, 60]], 8, 40)).toEqual([]);
  });

  it("blocks ahead: one beyond each end of every run, inside the rows", () => {
    expect(blocksAhead([8, 16], 8, 40)).toEqual([0, 24]);
    expect(blocksAhead([0], 8, 40)).toEqual([8]);
    expect(blocksAhead([32], 8, 40)).toEqual([24]);
    expect(blocksAhead([0, 32], 8, 40)).toEqual([8, 24]);
  });

  it("display rows to query rows: a word brings all its pieces", () => {
    expect(tokenRange(2, 5, null, 10)).toEqual([2, 5]);
    expect(tokenRange(2, 50, null, 10)).toEqual([2, 9]);
    // words of tokens [0], [1, 2, 3], [4], [5, 6]
    const starts = [0, 1, 4, 5];
    expect(tokenRange(1, 1, starts, 7)).toEqual([1, 3]);
    expect(tokenRange(2, 3, starts, 7)).toEqual([4, 6]);
  });

  it("blocks only where the stream offers them and a layer holds more than one", () => {
    const sm = (q_len: number, top_block?: number | null) => ({ q_len, top_block } as StreamMeta);
    expect(blockRowsOf(sm(4096, 64))).toBe(64);
    expect(blockRowsOf(sm(64, 64))).toBe(0);
    expect(blockRowsOf(sm(4096, null))).toBe(0);
    expect(blockRowsOf(sm(4096))).toBe(0);
  });
});

/** A fixture's chunks through a real chunk source, every request logged; `fail` keys answer with an error. */
function source(opts: Parameters<typeof makeFixture>[0], fail: (key: string) => boolean = () => false) {
  const f = makeFixture(opts);
  const requested: string[][] = [];
  const data = createChunkSource((keys) => {
    requested.push(keys);
    queueMicrotask(() => {
      const m = f.message(keys.filter((k) => !fail(k)));
      data.receive([...decodeChunks(m.content, m.buffers), ...keys.filter(fail).map((key) => ({ key, arrays: {}, error: "kernel busy" }))]);
    });
  });
  return { f, data, requested, sm: f.meta.streams.self as StreamMeta };
}

describe("a layer's rows, a block at a time", () => {
  it("asks for the blocks it lacks, then the ones beyond; assembled rows equal the whole chunk's", async () => {
    const { f, data, requested, sm } = source({ tokens: 40, heads: 3, layers: 2, topK: 5, topBlock: 8 });
    let changes = 0;
    const rows = layerRows(data, () => { changes++; });
    rows.show("self", 1, sm);
    expect(rows.need([[9, 20]])).toBe(false);
    expect(requested).toEqual([["top:self:1:8", "top:self:1:16"]]);
    expect(rows.need([[9, 20]])).toBe(false); // in flight: not asked twice
    expect(requested.length).toBe(1);
    await until(() => changes > 0);
    expect(rows.need([[9, 20]])).toBe(true);
    expect(requested[1]).toEqual(["top:self:1:0", "top:self:1:24"]);
    const whole = topRowsOf(decodeChunks(f.message(["top:self:1"]).content, f.message(["top:self:1"]).buffers)[0]!, 40, 5);
    const got = rows.rows()!;
    expect(got.slots).toBe(5);
    for (let h = 0; h < 3; h++) {
      for (let q = 8; q < 24; q++) {
        const at = (h * 40 + q) * 5;
        expect(got.rowmax[h * 40 + q]).toBe(whole.rowmax[h * 40 + q]);
        expect(Array.from(got.weight as Uint8Array).slice(at, at + 5)).toEqual(Array.from(whole.weight as Uint8Array).slice(at, at + 5));
        expect(Array.from(got.index as Uint16Array).slice(at, at + 5)).toEqual(Array.from(whole.index as Uint16Array).slice(at, at + 5));
      }
      expect(got.rowmax[h * 40 + 39]).toBe(0); // not loaded: empty, never another row's numbers
    }
  });

  it("a block already cached is used at once; a new layer drops answers for the old one", async () => {
    const { data, requested, sm } = source({ tokens: 40, layers: 3, topBlock: 8 });
    await data.request(["top:self:2:0"]);
    let changes = 0;
    const rows = layerRows(data, () => { changes++; });
    rows.show("self", 2, sm);
    expect(rows.need([[0, 3]])).toBe(true);
    rows.show("self", 0, sm);
    const sig = rows.signature();
    expect(rows.need([[0, 3]])).toBe(false);
    rows.show("self", 1, sm); // before layer 0's block arrives
    expect(rows.need([[0, 3]])).toBe(false);
    await until(() => changes > 0);
    expect(rows.rows()).not.toBeNull();
    expect(rows.signature()).not.toBe(sig);
    expect(requested.flat()).toContain("top:self:0:0");
    expect(rows.need([[0, 3]])).toBe(true);
  });

  it("a failed block is reported once and not asked for again until another layer is shown", async () => {
    const { data, requested, sm } = source({ tokens: 40, layers: 2, topBlock: 8 }, (k) => k === "top:self:0:8");
    let changes = 0;
    const rows = layerRows(data, () => { changes++; });
    rows.show("self", 0, sm);
    rows.need([[0, 12]]);
    await until(() => changes > 0);
    expect(rows.need([[0, 12]])).toBe(false);
    expect(rows.error()).toEqual({ key: "top:self:0:8", error: "kernel busy" });
    const asked = requested.flat().length;
    rows.need([[0, 12]]);
    expect(requested.flat().length).toBe(asked);
    rows.show("self", 1, sm);
    expect(rows.error()).toBeNull();
  });

  it("a block refused ahead of need is not asked for ahead again (a page holding only some)", async () => {
    const { data, requested, sm } = source({ tokens: 40, layers: 1, topBlock: 8 }, (k) => k === "top:self:0:16");
    let changes = 0;
    const rows = layerRows(data, () => { changes++; });
    rows.show("self", 0, sm);
    rows.need([[0, 12]]);
    await until(() => changes > 0);
    expect(rows.need([[0, 12]])).toBe(true); // 0 and 8 in; 16 asked ahead
    await until(() => changes > 1);
    const asked = requested.flat().length;
    for (let i = 0; i < 3; i++) expect(rows.need([[0, 12]])).toBe(true); // each draw
    expect(requested.flat().length).toBe(asked);
    expect(rows.error()).toBeNull(); // nothing on screen needs it
    expect(rows.need([[0, 20]])).toBe(false); // now a draw does: asked, and its error kept
    await until(() => rows.error() !== null);
    expect(rows.error()!.key).toBe("top:self:0:16");
  });

  it("whole-layer chunks where the stream has no blocks, and neighbours fetched whole", async () => {
    const { data, requested, sm } = source({ tokens: 12, layers: 3 });
    let changes = 0;
    const rows = layerRows(data, () => { changes++; });
    rows.show("self", 1, sm);
    expect(requested).toEqual([["top:self:1"]]);
    expect(rows.need([[0, 11]])).toBe(false);
    await until(() => changes > 0);
    expect(rows.need([[0, 11]])).toBe(true);
    expect(rows.rows()!.queries).toBe(12);
    rows.prefetchLayers([2, 0], [[0, 11]]);
    expect(requested[1]).toEqual(["top:self:2", "top:self:0"]);
  });

  it("neighbouring layers are prefetched block by block", () => {
    const { data, requested, sm } = source({ tokens: 40, layers: 3, topBlock: 8 });
    const rows = layerRows(data, () => undefined);
    rows.show("self", 1, sm);
    rows.prefetchLayers([2, 0], [[5, 10]]);
    expect(requested).toEqual([["top:self:2:0", "top:self:2:8", "top:self:0:0", "top:self:0:8"]]);
  });
});
