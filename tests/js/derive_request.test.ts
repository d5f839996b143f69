// The derive worker's message handling (js/derive_request.ts), run here without a worker: it
// decodes the embedded `qk:` chunks a request carries and keeps them for later requests, answers
// each key with the bytes the main thread computes (the same deriveFromQk), answers the head
// view's `top:` rows and a head's `attn:` before tiles asked earlier, and between the slices of a
// tile it has begun (a cell row or more a turn), and says what it lacks.
import { attnFromQk, topFromQk } from "../../js/derive";
import { type DeriveAnswer, type DeriveRequest, deriveFromQk, deriveQueue, deriveStepsFromQk, topBlockRows } from "../../js/derive_request";
import { tileFromQk, tileStepsFromQk } from "../../js/derive_tiles";
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

/** A queue whose turns run when `until` or `run` says (`sliceMs` a tile's slice), and the answers it posted. */
function harness(sliceMs?: number) {
  const turns: (() => void)[] = [];
  const answers: { answer: DeriveAnswer; transfer: ArrayBuffer[] }[] = [];
  const receive = deriveQueue((answer, transfer) => answers.push({ answer, transfer }), (run) => turns.push(run), sliceMs);
  let ran = 0;
  /** Run the next turn, once the last has asked for it, and let it (and decoding) finish. */
  const next = async (): Promise<void> => {
    const turn = turns.shift();
    if (turn) {
      ran++;
      turn();
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  };
  /** Run turns until `count` answers are posted. */
  const until = async (count: number): Promise<DeriveAnswer[]> => {
    while (answers.length < count) await next();
    return answers.map((a) => a.answer);
  };
  /** Run `count` more turns. */
  const run = async (count: number): Promise<void> => {
    const end = ran + count;
    while (ran < end) await next();
    await next(); // the last one's answer, if any
  };
  return { receive, until, run, answers, turns, ran: () => ran };
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

  it("computes a tile in steps, a cell row each, to the one-shot tile's bytes", () => {
    const long = 600; // 4 tokens a cell row at level 0
    const big = { ...sm, q_len: long, k_len: long };
    const qks = [causalQk(0, long, d), causalQk(1, long, d)];
    const cases: [string, Chunk[]][] = [
      ["tile:self:0:mean:0:0:0", qks], // 150 cell rows, 4 tokens each
      ["tile:self:0:1:1:1:1", [qks[1] as Chunk]], // the last 44 of 2 tokens, a head's
      ["tile:self:0:mean:2:2:1", qks], // 88 of 1 token, keys 256..511
    ];
    for (const [key, from] of cases) {
      const steps = deriveStepsFromQk(key, from, big);
      let step = steps.next(), count = 1;
      for (; !step.done; step = steps.next()) count++;
      expect(count).toBeGreaterThan(40);
      expect(bytes(step.value)).toEqual(bytes(tileFromQk(key, from, big)));
    }
    const rows = [...tileStepsFromQk("tile:self:0:1:1:1:1", [qks[1] as Chunk], big)];
    expect(rows).toEqual(Array.from({ length: 44 }, (_, i) => i)); // it yields each cell row's index
    // Any other chunk is computed in its first step.
    const top = deriveStepsFromQk("top:self:0", heads, sm).next();
    expect(top.done).toBe(true);
    expect(bytes(top.value as Chunk)).toEqual(bytes(topFromQk("top:self:0", heads, 8)));
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

  it("answers a top: or attn: asked while a tile is being computed before the tile's next slice", async () => {
    const h = harness(0); // a slice is one cell row
    h.receive(request(0, "tile:self:0:mean:0:0:0", await embedded()));
    await h.run(3);
    expect(h.answers).toEqual([]); // three of the tile's 40 cell rows are done
    h.receive(request(1, "attn:self:0:1"));
    h.receive(request(2, "tile:self:0:0:0:0:0"));
    await h.run(1);
    expect(h.answers.map((a) => a.answer.id)).toEqual([1]); // the next turn answers the attn:
    h.receive(request(3, "top:self:0:16"));
    const answers = await h.until(4);
    expect(answers.map((a) => a.id)).toEqual([1, 3, 0, 2]); // then the top:, then the begun tile, then the next
    expect(bytes(answers[0]?.chunk)).toEqual(bytes(attnFromQk("attn:self:0:1", qk(1))));
    expect(bytes(answers[1]?.chunk)).toEqual(bytes(topFromQk("top:self:0:16", heads, 8, [16, 32])));
    expect(bytes(answers[2]?.chunk)).toEqual(bytes(tileFromQk("tile:self:0:mean:0:0:0", heads, sm)));
    expect(bytes(answers[3]?.chunk)).toEqual(bytes(tileFromQk("tile:self:0:0:0:0:0", [qk(0)], sm)));
    const tile = answers[2]?.chunk as Chunk;
    expect(h.answers[2]?.transfer).toEqual([tile.arrays.tile?.data.buffer]);
    expect(h.ran()).toBe(2 + 41 + 41); // a turn a cell row of each tile and one to encode it, one each for attn: and top:
  });

  it("computes a tile in one turn when its slice lasts long enough", async () => {
    const h = harness(Number.POSITIVE_INFINITY);
    h.receive(request(0, "tile:self:0:mean:0:0:0", await embedded()));
    expect((await h.until(1)).map((a) => a.id)).toEqual([0]);
    expect(h.ran()).toBe(1);
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
