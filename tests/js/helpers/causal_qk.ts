// A causal head's `qk:` chunk (layer 0 of stream "self"), its q and k from a fixed sequence:
// what pages that derive compute their tiles, top keys and weights from.
import type { Chunk } from "../../../js/wire/types";

const rnd = (i: number): number => Math.sin(i * 12.9898) * 2;

/** Head `head`'s `qk:self:0:<head>` over `n` tokens, head size `d`; query i sees keys 0..i. */
export function causalQk(head: number, n: number, d: number): Chunk {
  return {
    key: `qk:self:0:${head}`,
    arrays: {
      q: { dtype: "f32", shape: [n, d], data: Float32Array.from({ length: n * d }, (_, i) => rnd(i + 1000 * head)) },
      k: { dtype: "f32", shape: [n, d], data: Float32Array.from({ length: n * d }, (_, i) => rnd(i + 7 + 1000 * head)) },
      scaling: { dtype: "f32", shape: [1], data: Float32Array.from([0.5]) },
      kv_head: { dtype: "u32", shape: [1], data: Uint32Array.from([head]) },
      spans: { dtype: "u32", shape: [n, 2], data: Uint32Array.from({ length: 2 * n }, (_, i) => (i % 2 ? (i - 1) / 2 + 1 : 0)) },
    },
  };
}
