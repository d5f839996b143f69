// The wire's golden fixtures (tests/fixtures/wire, written by tests/wire_fixtures.py):
// the TypeScript side reads Python's keys, `_meta` and chunks alike, and runs the same
// table of stream-change cases (tests/test_wire_fixtures.py runs it in Python).
import {
  attnKey, CHUNK_KINDS, parseChunkKey, pseudoKey, qkKey, queryRolloutKey, statsKey, thumbsKey, tileKey, topBlockKey, topKey, writeChunkKey,
} from "../../js/wire/keys";
import { decodeChunks, type ChunksMessage } from "../../js/data";
import { clampToStream, streamShape, type StreamSelection, type StreamShape } from "../../js/wire/stream_change";
import type { Meta } from "../../js/wire/types";
import chunksJson from "../fixtures/wire/chunks.json";
import keysJson from "../fixtures/wire/keys.json";
import metaJson from "../fixtures/wire/meta.json";
import streamChangeJson from "../fixtures/wire/stream_change.json";

const FILES: Record<string, unknown> = { "keys.json": keysJson, "meta.json": metaJson, "chunks.json": chunksJson, "stream_change.json": streamChangeJson };
const read = <T>(name: string): T => FILES[name] as T;

/** Base64 to bytes without node's Buffer (the views' own decoder is for embedded chunks). */
const bytes = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

interface KeyEntry { key: string; side: string | null; kind: string; stream: string; layer: number | null; head: number | null; first_row: number | null; tile: number[] | null }

describe("chunk keys (keys.json)", () => {
  const fixture = read<{ kinds: string[]; keys: KeyEntry[]; malformed: string[] }>("keys.json");

  it("know the same kinds as encode/keys.py", () => {
    expect([...CHUNK_KINDS]).toEqual(fixture.kinds);
  });

  it("read every key into Python's parts and write it back", () => {
    for (const e of fixture.keys) {
      const parsed = parseChunkKey(e.key);
      expect(parsed, e.key).toEqual({ side: e.side, kind: e.kind, stream: e.stream, layer: e.layer, head: e.head, firstRow: e.first_row, tile: e.tile });
      expect(writeChunkKey(parsed as NonNullable<typeof parsed>)).toBe(e.key);
    }
  });

  it("the views' builders write the keys Python's write", () => {
    const built: Record<string, (e: KeyEntry) => string> = {
      thumbs: (e) => thumbsKey(e.stream, e.first_row ?? undefined),
      top: (e) => (e.first_row == null ? topKey(e.stream, e.layer ?? 0) : topBlockKey(e.stream, e.layer ?? 0, e.first_row)),
      attn: (e) => attnKey(e.stream, e.layer ?? 0, e.head ?? 0),
      qk: (e) => qkKey(e.stream, e.layer ?? 0, e.head ?? 0),
      stats: (e) => statsKey(e.stream),
      pseudo: (e) => (e.first_row == null ? pseudoKey(e.stream, e.layer ?? 0) : queryRolloutKey(e.stream, e.layer ?? 0, e.first_row)),
      tile: (e) => tileKey(e.stream, e.layer ?? 0, e.head ?? "mean", ...(e.tile as [number, number, number])),
    };
    const checked = fixture.keys.filter((e) => e.side === null && built[e.kind]);
    expect(checked.length).toBeGreaterThanOrEqual(11);
    for (const e of checked) expect(built[e.kind]?.(e)).toBe(e.key);
  });

  it("refuse the keys Python refuses by shape", () => {
    for (const key of fixture.malformed) expect(parseChunkKey(key), key).toBeNull();
  });
});

describe("_meta and chunks (meta.json, chunks.json)", () => {
  const meta = read<{ _meta: Meta }>("meta.json")._meta;
  const fixture = read<{ all_keys: string[]; message: ChunksMessage; buffers: string[]; values: Record<string, Record<string, number[]>> }>("chunks.json");

  it("every key a page of the trace holds names a stream, layer and head that _meta has", () => {
    for (const key of fixture.all_keys) {
      const p = parseChunkKey(key);
      const sm = p ? meta.streams[p.stream] : undefined;
      expect(sm, key).toBeDefined();
      if (p?.layer != null) expect(p.layer).toBeLessThan(sm?.layers.length ?? 0);
      if (p?.head != null) expect(p.head).toBeLessThan(sm?.num_heads ?? 0);
    }
  });

  it("decodes Python's reply to the same shapes and values", () => {
    const chunks = decodeChunks(fixture.message, fixture.buffers.map(bytes));
    expect(chunks.map((c) => c.key)).toEqual(Object.keys(fixture.values));
    for (const c of chunks) {
      expect(c.error).toBeUndefined();
      const wire = fixture.message.chunks.find((w) => w.key === c.key);
      for (const spec of (wire?.arrays ?? []) as { name: string; shape: number[]; dtype: string }[]) {
        const got = c.arrays[spec.name];
        expect(got?.shape, `${c.key} ${spec.name}`).toEqual(spec.shape);
        expect(got?.dtype).toBe(spec.dtype);
        expect(Array.from(got?.data ?? [])).toEqual(fixture.values[c.key]?.[spec.name]);
      }
    }
  });

  it("the thumbnails' shape is the one _meta announces", () => {
    const sm = meta.streams.self;
    const thumbs = fixture.message.chunks.find((c) => c.key === "thumbs:self")?.arrays as { shape: number[] }[];
    expect(thumbs[0]?.shape).toEqual([sm?.layers.length, sm?.num_heads, sm?.thumb_rows, sm?.thumb_cols]);
  });
});

describe("stream change (stream_change.json)", () => {
  const table = read<{ streams: Record<string, StreamShape>; cases: { name: string; old: string; new: string; selection: StreamSelection; expect: StreamSelection }[] }>("stream_change.json");

  for (const c of table.cases) {
    it(c.name, () => {
      const got = clampToStream(c.selection, table.streams[c.old] as StreamShape, table.streams[c.new] as StreamShape);
      expect(got).toEqual(c.expect);
    });
  }

  it("a stream's shape comes from _meta: a side with sentences makes it segmented", () => {
    const meta = read<{ _meta: Meta }>("meta.json")._meta;
    const sm = meta.streams.self as NonNullable<(typeof meta.streams)["self"]>;
    expect(streamShape(meta, sm).segmented).toBe(false);
    const paired: Meta = { ...meta, sides: { ...meta.sides, source: { ...meta.sides.source, labels: [], segments: [0, 0, 1] } } };
    expect(streamShape(paired, sm).segmented).toBe(true);
  });
});
