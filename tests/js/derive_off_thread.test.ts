// Where the derive worker's text is not built in (here: vitest, no js/build.mjs define) or a host
// forbids workers, chunks are computed on the main thread: deriveOffThread gives onMain()'s
// chunk, and marks it as computed there.
import { describe, expect, it } from "vitest";
import { deriveOffThread, MAIN_MARK } from "../../js/derive_off_thread";
import type { Chunk, StreamMeta } from "../../js/wire/types";

describe("deriveOffThread", () => {
  it("computes on the main thread without a worker", async () => {
    const tile: Chunk = { key: "tile:self:0:-1:0:0:0", arrays: { tile: { dtype: "u8", shape: [1, 1], data: new Uint8Array([7]) } } };
    let calls = 0;
    const got = await deriveOffThread(tile.key, [], () => ({}), {} as StreamMeta, async () => {
      calls++;
      return tile;
    });
    expect(got).toBe(tile);
    expect(calls).toBe(1);
    const marks = performance.getEntriesByName(MAIN_MARK) as PerformanceMark[];
    expect(marks.map((m) => m.detail)).toContain(tile.key);
  });

  it("passes the main thread's error on as it is", async () => {
    const failing = deriveOffThread("top:self:0", [], () => ({}), {} as StreamMeta, () => Promise.reject(new Error("head 1 is 3×4, head 0 3×5")));
    await expect(failing).rejects.toThrow("head 1 is 3×4, head 0 3×5");
  });
});
