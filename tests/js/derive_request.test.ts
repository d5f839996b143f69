// The derive worker's message handling (js/derive_request.ts), run here without a worker: it
// decodes the embedded `qk:` chunks a request carries and keeps them for later requests, answers
// each key with the bytes the main thread computes (the same deriveFromQk), answers the head
// view's `top:` rows and a head's `attn:` before tiles asked earlier, and says what it lacks.
import { attnFromQk, topFromQk } from "../../js/derive";
import { type DeriveAnswer, type DeriveRequest, deriveFromQk, deriveQueue, topBlockRows } from "../../js/derive_request";
import { tileFromQk } from "../../js/derive_tiles";
import type { Chunk, EmbeddedChunk, StreamMeta } from "../../js/wire/types";
import { causalQk } from "./helpers/causal_qk";
import { embedChunk } from "./helpers/deflate";

const n = 40, d = 4;
const qk = (head: number): Chunk => causalQk(head, n, d);
const sm = { q_len: n, k_len: n, num_heads: 2, layers: [0], head_dim: d, top_k: 8, top_block: 16 } as unknown as StreamMeta;
const heads = [qk(0), qk(1)];
const sources = heads.map((c) => c.key);
const embedded = async (): Promise<Record<string, EmbeddedChunk>> =>
  Object.fromEntries(await Promise.all(heads.map(async (c) => [c.key, await embedChunk(c)] as const)));

/** A queue whose turns run when `until` says, and the answers it posted. */
function harness() {
  const turns: (() => void)[] = [];
  const answers: { answer: DeriveAnswer; transfer: ArrayBuffer[] }[] = [];
  const receive = deriveQueue((answer, transfer) => answers.push({ answer, transfer }), (run) => turns.push(run));
  /** Run turns (and let decoding finish) until `count` answers are posted. */
  const until = async (count: number): Promise<DeriveAnswer[]> => {
    while (answers.length < count) {
      turns.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return answers.map((a) => a.answer);
  };
  return { receive, until, answers, turns };
}

const request = (id: number, key: string, carried: Record<string, EmbeddedChunk> = {}): DeriveRequest => ({
  id,
  key,
  sources: key.startsWith("attn:") || /^tile:self:0:\d/.test(key) ? [`qk:self:0:${key.split(":")[3]}`] : sources,
  embedded: carried,
  sm,
});

const bytes = (c: Chunk | undefined): Record<string, number[]> =>
  Object.fromEntries(Object.entries(c?.arrays ?? {}).map(([name, a]) => [name, [...a.shape, ...Array.from(a.data as ArrayLike<number>)]]));

describe("deriveFromQk", () => {
  it("computes each key as the main thread's functions do", () => {
    expect(bytes(deriveFromQk("top:self:0", heads, sm))).toEqual(bytes(topFromQk("top:self:0", heads, 8)));
    expect(bytes(deriveFromQk("top:self:0:16", heads, sm))).toEqual(bytes(topFromQk("top:self:0:16", heads, 8, [16, 32])));
    expect(bytes(deriveFromQk("attn:self:0:1", [qk(1)], sm))).toEqual(bytes(attnFromQk("attn:self:0:1", qk(1))));
    expect(bytes(deriveFromQk("tile:self:0:mean:0:0:0", heads, sm))).toEqual(bytes(tileFromQk("tile:self:0:mean:0:0:0", heads, sm)));
  });

  it("refuses a block the page does not offer and a key it does not compute", () => {
    expect(topBlockRows(32, sm)).toEqual([32, 40]);
    expect(topBlockRows(8, sm)).toBeNull();
    expect(() => deriveFromQk("top:self:0:8", heads, sm)).toThrow("top:self:0:8 is no block of rows this page offers");
    expect(() => deriveFromQk("thumb:self:0:0", heads, sm)).toThrow("thumb:self:0:0 is not computed from q and k");
  });
});

describe("deriveQueue", () => {
  it("decodes the chunks a request carries, keeps them, and answers later requests from them", async () => {
    const h = harness();
    h.receive(request(0, "top:self:0:0", await embedded()));
    h.receive(request(1, "top:self:0:16"));
    const answers = await h.until(2);
    expect(answers.map((a) => a.id)).toEqual([0, 1]);
    expect(bytes(answers[0]?.chunk)).toEqual(bytes(topFromQk("top:self:0:0", heads, 8, [0, 16])));
    expect(bytes(answers[1]?.chunk)).toEqual(bytes(topFromQk("top:self:0:16", heads, 8, [16, 32])));
    // Its arrays' buffers move to the page (each once), not copied.
    const chunk = answers[1]?.chunk as Chunk;
    expect(h.answers[1]?.transfer).toEqual([chunk.arrays.weight?.data.buffer, chunk.arrays.rowmax?.data.buffer, chunk.arrays.index?.data.buffer]);
  });

  it("answers top: and attn: before tiles asked earlier, one a turn", async () => {
    const h = harness();
    h.receive(request(0, "tile:self:0:mean:0:0:0", await embedded()));
    h.receive(request(1, "tile:self:0:0:0:0:0"));
    h.receive(request(2, "top:self:0:0"));
    h.receive(request(3, "attn:self:0:0"));
    expect(h.turns.length).toBe(1); // one turn waits at a time: requests that come in meanwhile queue
    const answers = await h.until(4);
    expect(answers.map((a) => a.id)).toEqual([2, 3, 0, 1]);
    expect(bytes(answers[1]?.chunk)).toEqual(bytes(attnFromQk("attn:self:0:0", qk(0))));
    expect(bytes(answers[3]?.chunk)).toEqual(bytes(tileFromQk("tile:self:0:0:0:0:0", [qk(0)], sm)));
  });

  it("says what it lacks or could not decode or compute, and goes on", async () => {
    const h = harness();
    h.receive(request(0, "top:self:0:0"));
    expect(await h.until(1)).toEqual([{ id: 0, error: "the worker holds no qk:self:0:0" }]);
    h.receive(request(1, "top:self:0:8", await embedded()));
    expect((await h.until(2))[1]).toEqual({ id: 1, error: "top:self:0:8 is no block of rows this page offers" });
    h.receive(request(2, "attn:self:0:1", { "qk:self:0:1": { arrays: [], data: "" } }));
    h.receive(request(3, "attn:self:0:0"));
    const answers = await h.until(4);
    expect(answers[2]?.error).toBe(`qk:self:0:1: it does not match the widget's _meta: it has no array "q" (it has none)`);
    expect(bytes(answers[3]?.chunk)).toEqual(bytes(attnFromQk("attn:self:0:0", qk(0))));
  });
});
