import { defaultQuery, type Side } from "../../js/tokens";
import type { TokenKind } from "../../js/wire/types";

const sideOf = (kinds: TokenKind[]): Side => ({
  labels: kinds.map((_, i) => String(i)), raw: kinds.map((_, i) => String(i)), kinds,
  continues: kinds.map(() => false), segments: null,
});

describe("defaultQuery", () => {
  // [CLS] a b c [SEP] [PAD] [PAD]
  const side = sideOf(["special", "token", "token", "token", "special", "padding", "padding"]);

  it("opens a causal stream on its last ordinary query token", () => {
    expect(defaultQuery(side, { causal: true })).toBe(3);
    expect(defaultQuery(sideOf(["token", "token", "token"]), { causal: true })).toBe(2); // GPT-2: no specials
    expect(defaultQuery(sideOf(["special", "token", "token"]), { causal: true })).toBe(2); // Llama: BOS first
  });

  it("opens a bidirectional stream, and a page without the field, on the first", () => {
    expect(defaultQuery(side, { causal: false })).toBe(1);
    expect(defaultQuery(side, {})).toBe(1); // older pages: no `causal` in their meta
  });

  it("takes only a true `causal`, and falls back when no token is ordinary", () => {
    expect(defaultQuery(side, { causal: "yes" as unknown as boolean })).toBe(1);
    expect(defaultQuery(sideOf(["special", "special", "padding"]), { causal: true })).toBe(2);
    expect(defaultQuery(sideOf(["special", "special"]), {})).toBe(0);
    expect(defaultQuery(sideOf([]), { causal: true })).toBe(0);
  });
});
