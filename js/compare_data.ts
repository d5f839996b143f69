// One side of a comparison as a DataSource: a view asks for its usual keys
// (`top:self:0`) and gets that side's chunks (`diff/top:self:0`), so the views
// need not know the key prefixes (docs/protocol.md, "Comparisons").
import { sideKey } from "./wire/keys";
import type { Chunk, CompareSide, DataSource } from "./wire/types";

export function sideData(data: DataSource, side: CompareSide): DataSource {
  return {
    request: (keys) => data.request(keys.map((k) => sideKey(side, k))).then((got) => {
      const out = new Map<string, Chunk>();
      for (const k of keys) {
        const c = got.get(sideKey(side, k));
        if (c) out.set(k, c);
      }
      return out;
    }),
    peek: (key) => data.peek(sideKey(side, key)),
  };
}
