import { chunkWords } from "../../js/chunk_words";
import type { Meta } from "../../js/wire/types";
import { syncHeadPicker } from "../../js/views/neuron/neuron_controls";

const meta = { streams: { self: { layers: [2, 5], num_heads: 4 } } } as unknown as Meta;

describe("messages name views, layers and heads, never chunk keys", () => {
  it("says a key in the views' words, with the model's layer numbers", () => {
    expect(chunkWords("qk:self:1:3", meta)).toBe("q and k of layer 5 · head 3");
    expect(chunkWords("attn:self:0:0", meta)).toBe("weights of layer 2 · head 0");
    expect(chunkWords("top:self:1:64", meta)).toBe("the head view's lines of layer 5 (rows 64…)");
    expect(chunkWords("thumbs:self", meta)).toBe("the model view's thumbnails");
    expect(chunkWords("nonsense", meta)).toBe("nonsense");
  });

  it("the neuron view's head picker marks heads whose q and k a page left out", () => {
    const sel = document.createElement("select");
    syncHeadPicker(sel, 4, 0, [1, 3]);
    const texts = [...sel.options].map((o) => o.textContent);
    expect(texts).toEqual(["head 0", "head 1 (no q/k in this page)", "head 2", "head 3 (no q/k in this page)"]);
    syncHeadPicker(sel, 4, 1, []);
    expect([...sel.options].filter((o) => o.dataset.missing).length).toBe(0);
    expect(sel.value).toBe("1");
  });
});
