// Saved state and pages are untrusted input (issue 40): an embedded chunk decodes to exactly
// the bytes its arrays' specs claim, the claim itself is bounded, and inflation stops as soon
// as it passes the claim, so a deflate bomb is an error on that chunk, not gigabytes.
import { embeddedBytes, inflateBase64, MAX_CHUNK_BYTES } from "../../js/data";
import { decodeEmbedded } from "../../js/saved";
import { deflated } from "./helpers/deflate";

describe("embedded chunks are bounded by their specs", () => {
  it("lay out arrays 8-byte aligned, as the page writes them", () => {
    expect(embeddedBytes([{ name: "a", dtype: "u8", shape: [3] }, { name: "b", dtype: "f32", shape: [2] }])).toBe(16);
    expect(embeddedBytes([{ name: "q", dtype: "f32", shape: [4, 2], encoding: "f16-shuffled" }])).toBe(16);
  });

  it("refuse shapes that are not whole numbers ≥ 0, unknown dtypes, and claims past the cap", () => {
    expect(() => embeddedBytes([{ name: "a", dtype: "u8", shape: [-1] }])).toThrow(/shape \[-1\]/);
    expect(() => embeddedBytes([{ name: "a", dtype: "u8", shape: [1.5] }])).toThrow(/whole numbers/);
    expect(() => embeddedBytes([{ name: "a", dtype: "x9" as "u8", shape: [1] }])).toThrow(/unknown dtype x9/);
    expect(() => embeddedBytes([{ name: "a", dtype: "f32", shape: [MAX_CHUNK_BYTES, 2] }])).toThrow(/more than/);
  });

  it("stop inflating a bomb as soon as it passes the claim", async () => {
    const bomb = await deflated(new Uint8Array(4 * 1024 * 1024)); // 4 MiB of zeros: a few kB of base64
    expect(bomb.length).toBeLessThan(20_000);
    await expect(inflateBase64(bomb, 16)).rejects.toThrow(/inflates past the 16 bytes/);
    const chunk = await decodeEmbedded("top:self:0", { arrays: [{ name: "weight", dtype: "u8", shape: [16] }], data: bomb });
    expect(chunk.arrays).toEqual({});
    expect(chunk.error).toMatch(/could not decode: it inflates past the 16 bytes/);
  });

  it("name a chunk whose bytes fall short of its specs, and decode one that matches", async () => {
    const short = await decodeEmbedded("attn:self:0:0", { arrays: [{ name: "weight", dtype: "u8", shape: [4, 4] }], data: await deflated(new Uint8Array(8)) });
    expect(short.error).toMatch(/holds 8 bytes where its arrays need 16/);
    const good = await decodeEmbedded("attn:self:0:0", { arrays: [{ name: "weight", dtype: "u8", shape: [2, 2] }], data: await deflated(Uint8Array.of(1, 2, 3, 4)) });
    expect(good.error).toBeUndefined();
    expect(Array.from(good.arrays.weight!.data)).toEqual([1, 2, 3, 4]);
  });
});
