// Where the tile worker's text is not built in (here: vitest, no js/build.mjs define) or a host
// forbids workers, tiles are computed on the main thread: tileOffThread gives fallback()'s tile.
import { describe, expect, it } from "vitest";
import { tileOffThread } from "../../js/tile_worker";
import type { Chunk, StreamMeta } from "../../js/wire/types";

describe("tileOffThread", () => {
  it("computes on the main thread without a worker", async () => {
    const tile: Chunk = { key: "tile:self:0:-1:0:0:0", arrays: { tile: { dtype: "u8", shape: [1, 1], data: new Uint8Array([7]) } } };
    let calls = 0;
    const got = await tileOffThread(tile.key, [], [], {} as StreamMeta, () => {
      calls++;
      return tile;
    });
    expect(got).toBe(tile);
    expect(calls).toBe(1);
  });
});
