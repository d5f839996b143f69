// The keys as docs/protocol.md ("Chunks") spells them, which Python parses.
import { attnKey, parseChunkKey, qkKey, thumbsKey, topKey, writeChunkKey } from "../../js/wire/keys";

describe("chunk keys", () => {
  it("name the stream, the layer position and the head, colon-separated", () => {
    expect(thumbsKey("self")).toBe("thumbs:self");
    expect(topKey("cross", 3)).toBe("top:cross:3");
    expect(attnKey("encoder", 0, 11)).toBe("attn:encoder:0:11");
    expect(qkKey("decoder", 5, 2)).toBe("qk:decoder:5:2");
  });
});

describe("parseChunkKey", () => {
  it("reads what the builders write, a comparison's side included", () => {
    for (const key of ["thumbs:self:9", "top:self:2:64", "pseudo:self:1:1090", "tile:self:0:mean:1:0:1", "diff/attn:self:1:3"]) {
      const parsed = parseChunkKey(key);
      expect(parsed).not.toBeNull();
      expect(writeChunkKey(parsed as NonNullable<typeof parsed>)).toBe(key);
    }
    expect(parseChunkKey("tile:self:0:mean:1:0:1")).toMatchObject({ layer: 0, head: null, tile: [1, 0, 1] });
  });

  it("returns null for what is not a key's shape", () => {
    for (const key of ["top:self", "attn:self:-1:0", "pixies:self", "tile:self:0:avg:0:0:0", "stats:self:0"]) expect(parseChunkKey(key)).toBeNull();
  });
});
