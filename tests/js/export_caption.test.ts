// Exported pictures say what they show: a caption band above the picture (js/export_image.ts),
// the neuron view's column headers, and each view's caption (model, layer, head, query, scale, rank).
import { createChunkSource, decodeChunks } from "../../js/data";
import { captioned, pictureSvg, wrapCaption } from "../../js/export_image";
import { isolate } from "../../js/label_text";
import type { Picture } from "../../js/paint/painter";
import type { Meta } from "../../js/wire/types";
import { renderHeadView } from "../../js/views/head/head";
import { renderModelView } from "../../js/views/model/model";
import { renderNeuronView } from "../../js/views/neuron/neuron";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

/** The SVG a view's "SVG" button saves. */
async function savedSvg(view: HTMLElement): Promise<string> {
  const blobs: Blob[] = [];
  const orig = URL.createObjectURL;
  URL.createObjectURL = ((b: Blob) => { blobs.push(b); return "blob:x"; }) as typeof URL.createObjectURL;
  view.querySelector<HTMLButtonElement>('[data-testid="save-svg"]')!.click();
  URL.createObjectURL = orig;
  return blobs[0]!.text();
}

const unescapeXml = (t: string): string => t.replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
const texts = (svg: string): string[] => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => unescapeXml(m[1]!));

describe("captioned", () => {
  const square: Picture = {
    width: 400, height: 100, background: "#111111", font: "11px sans-serif",
    paint: (p) => { p.rect(0, 0, 10, 10, "#ff0000"); p.text(5, 50, "inside", "#ffffff"); },
  };

  it("writes the lines in a band above the picture and moves the picture down", () => {
    const pic = captioned(square, ["first line", "second line"]);
    expect(pic.height).toBeGreaterThan(100 + 2 * 12);
    const svg = pictureSvg(pic);
    expect(texts(svg).slice(0, 2)).toEqual(["first line", "second line"]);
    const band = pic.height - 100;
    expect(svg).toContain(`y="${band}"`); // the red square now starts under the band
    expect(svg).toMatch(/fill="#e6e6e6"[^>]*>first line|>first line/); // light ink on a dark picture
  });

  it("wraps long lines and leaves a picture without lines as it is", () => {
    expect(wrapCaption("aaa bbb ccc ddd", 8)).toEqual(["aaa bbb", "ccc ddd"]);
    expect(captioned(square, [])).toBe(square);
  });

  it("never breaks a line inside an isolated label, so no line leaves a bidi control open", () => {
    const label = "\u2068a \u202ex y\u202c z\u2069"; // an isolate with spaces and an override inside
    const lines = wrapCaption(`query ${label} more words here`, 6);
    expect(lines).toContain(label);
    for (const line of lines) {
      const opens = [...line].filter((c) => c === "\u2068").length;
      const closes = [...line].filter((c) => c === "\u2069").length;
      expect(opens).toBe(closes);
    }
  });
});

describe("view exports", () => {
  it("the neuron view's picture has its column headers and says layer, head, query and score", async () => {
    const f = makeFixture({ bias: true });
    const ctx = viewContext(f, { view: "neuron", layer: 1, head: 2, query: 3 });
    renderNeuronView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="neuron-view"]')!;
    await until(() => view.dataset.ready === "true");
    const all = texts(await savedSvg(view));
    for (const header of ["key", "k", "q × k", "q · k", "score", "weight"]) expect(all).toContain(header);
    const caption = all.slice(0, 3).join(" ");
    expect(caption).toContain(`${isolate(f.meta.title ?? "")} · neuron view · layer 1 · head 2`); // the title isolated
    expect(caption).toContain('query “\u2068tok3\u2069” (#3)'); // the label isolated, as every image label
    expect(caption).toContain("+ bias");
  });

  it("the model view's picture names the model, the scale and the statistic it is ranked by", async () => {
    const f = makeFixture({ layers: 2, heads: 3 });
    const meta: Meta = { ...f.meta, statistics: [{ name: "sink", label: "attention sink", formula: "mean weight on token 0", source: "" }] };
    const ctx = viewContext(f, { view: "model", rank_by: "sink" });
    const stats = { key: "stats:self", arrays: { sink: { dtype: "f32" as const, shape: [2, 3], data: Float32Array.from([0.1, 0.5, 0.3, 0.9, 0.2, 0.4]) } } };
    const data = createChunkSource((keys) => queueMicrotask(() => {
      const m = f.message(keys.filter((k) => k !== "stats:self"));
      data.receive([...decodeChunks(m.content, m.buffers), ...(keys.includes("stats:self") ? [stats] : [])]);
    }));
    renderModelView({ ...ctx, meta, data });
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')!;
    await until(() => view.dataset.ready === "true" && view.dataset.rankedBy === "sink");
    const caption = texts(await savedSvg(view)).join(" ");
    expect(caption).toContain(`${isolate(f.meta.title ?? "")} · model view`);
    expect(caption).toContain("rows: layers, columns: heads");
    expect(caption).toContain(`ranked by ${isolate("attention sink")}`);
  });

  it("the head view's caption is above the labels and says which rows of a long input are drawn", async () => {
    const f = makeFixture({ tokens: 80 });
    const ctx = viewContext(f, { layer: 1, query: 2 });
    renderHeadView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="head-view"]')!;
    await until(() => view.dataset.ready === "true");
    const svg = await savedSvg(view);
    const all = texts(svg);
    const caption = all.slice(0, 4).join(" ");
    expect(caption).toContain("layer 1 · all 3 heads · query");
    expect(caption).toMatch(/rows 1–\d+ of 80 drawn/);
    expect(caption).toContain("lines:"); // the scale, of what the picture has
    expect(caption).not.toContain("key bars"); // the screen's bars are not in the picture
    // Every label lies below the caption band (under the picture it met the last label).
    const ys = [...svg.matchAll(/<text[^>]*y="([\d.]+)"[^>]*>([^<]*)<\/text>/g)];
    const bandBottom = Number(ys.find((m) => m[2]!.startsWith("rows 1–"))![1]);
    const labels = ys.filter((m) => /^\u2068?tok\d+\u2069?$/.test(m[2]!));
    expect(labels.length).toBeGreaterThan(20);
    for (const m of labels) expect(Number(m[1])).toBeGreaterThan(bandBottom);
  });
});
