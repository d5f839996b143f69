import { createPageHost, leftOutWords, type EmbeddedChunk } from "../../js/host";
import { renderPage } from "../../js/standalone";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, type Fixture } from "./helpers/fixture";

/** The page host's reply to a request, as far as these tests read it. */
interface Reply { type: string; chunks: { key: string; error?: string; arrays?: { name: string; buffer: number }[] }[] }

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

function b64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Embed chunks as save_html does: 8-byte aligned concatenation, deflate-raw, base64. */
async function embed(f: Fixture, keys: string[]): Promise<Record<string, EmbeddedChunk>> {
  const out: Record<string, EmbeddedChunk> = {};
  for (const key of keys) {
    const c = f.chunk(key);
    if (c.error) { out[key] = { error: c.error }; continue; }
    const arrays = c.arrays!;
    let size = 0;
    const offs = arrays.map((a) => { size = Math.ceil(size / 8) * 8; const o = size; size += a.bytes.byteLength; return o; });
    const cat = new Uint8Array(size);
    arrays.forEach((a, i) => cat.set(a.bytes, offs[i]));
    const z = new Uint8Array(await new Response(new Blob([cat]).stream().pipeThrough(new CompressionStream("deflate-raw"))).arrayBuffer());
    out[key] = { arrays: arrays.map(({ name, dtype, shape }) => ({ name, dtype, shape })), data: b64(z) };
  }
  return out;
}

describe("page host", () => {
  it("get/set/on/off/save_changes round trip", () => {
    const host = createPageHost({ layer: 0 }, {});
    const seen: unknown[] = [];
    const fn = (v: unknown) => seen.push(v);
    host.on("change:layer", fn);
    host.set("layer", 3);
    host.save_changes();
    expect(host.get("layer")).toBe(3);
    host.off("change:layer", fn);
    host.set("layer", 4);
    expect(seen).toEqual([3]);
  });

  it("answers send({type: request}) from embedded deflate-raw chunks", async () => {
    const f = makeFixture();
    const host = createPageHost({}, await embed(f, ["qk:self:0:1", "top:self:0"]));
    const got = new Promise<[Reply, Uint8Array[]]>((resolve) => host.on("msg:custom", (c: unknown, b: Uint8Array[]) => resolve([c as Reply, b])));
    host.send({ type: "request", keys: ["qk:self:0:1", "attn:self:0:0"] });
    const [content, buffers] = await got;
    expect(content.type).toBe("chunks");
    expect(content.chunks[1]).toEqual({ key: "attn:self:0:0", error: expect.stringMatching(/not included/) });
    const q = content.chunks[0]!.arrays!.find((a) => a.name === "q");
    const qArr = new Float32Array(buffers[q!.buffer]!.slice().buffer);
    expect(Array.from(qArr)).toEqual(Array.from(f.q[0]![1]!));
  });

  it("a why pair the page lacks says the model splits it in the notebook, not that size left it out", async () => {
    const host = createPageHost({}, {});
    const got = new Promise<Reply>((resolve) => host.on("msg:custom", (c: unknown) => resolve(c as Reply)));
    host.send({ type: "request", keys: ["why:self:0:1:3:2", "attn:self:0:0"] });
    const [why, attn] = (await got).chunks;
    expect(why!.error).toBe(leftOutWords("why:self:0:1:3:2"));
    expect(why!.error).toMatch(/no model to split it.*w\.explain\(model\)/);
    expect(why!.error).not.toMatch(/bound its size/);
    expect(attn!.error).toMatch(/left out to bound its size/);
  });

  it("renderPage reads the script tags and draws; missing chunks show a message", async () => {
    const f = makeFixture();
    const state = { _meta: { ...f.meta, embedded: true }, view: "head", stream: "self", layer: 0, heads: [0, 1, 2], head: 0, query: null, key: null, pair_filter: "all", theme: "light" };
    const chunks = await embed(f, ["top:self:0", "thumbs:self"]);
    document.body.innerHTML = '<div id="attnscope-root"></div><script type="application/json" id="attnscope-state"></script><script type="application/json" id="attnscope-chunks"></script>';
    document.getElementById("attnscope-state")!.textContent = JSON.stringify(state);
    document.getElementById("attnscope-chunks")!.textContent = JSON.stringify(chunks);
    expect(window.attnscope?.renderPage).toBe(renderPage);
    renderPage();
    const root = document.getElementById("attnscope-root")!;
    await until(() => root.querySelector<HTMLElement>('[data-testid="head-view"]')?.dataset.ready === "true");
    root.querySelector<HTMLElement>('[data-testid="tab-model"]')!.click();
    await until(() => root.querySelector<HTMLElement>('[data-testid="model-view"]')?.dataset.ready === "true");
    root.querySelector<HTMLElement>('[data-testid="tab-neuron"]')!.click();
    await until(() => /not included in this exported page/.test(root.textContent ?? ""));
  });

  it("renderPage reports a missing state element", () => {
    document.body.innerHTML = '<div id="attnscope-root"></div>';
    renderPage();
    expect(document.body.textContent).toMatch(/attnscope-state/);
  });
});
