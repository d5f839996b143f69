// The keys as docs/protocol.md ("Chunks") spells them, which Python parses.
import { attnKey, qkKey, thumbsKey, topKey } from "../../js/chunk_keys";

describe("chunk keys", () => {
  it("name the stream, the layer position and the head, colon-separated", () => {
    expect(thumbsKey("self")).toBe("thumbs:self");
    expect(topKey("cross", 3)).toBe("top:cross:3");
    expect(attnKey("encoder", 0, 11)).toBe("attn:encoder:0:11");
    expect(qkKey("decoder", 5, 2)).toBe("qk:decoder:5:2");
  });
});
