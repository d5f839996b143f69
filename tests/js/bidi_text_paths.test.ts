// Every text attnscope quotes inside its own words is an isolate (issue 40, item 5): `_meta.notes`
// (each note), a scan's statistic names in the rank menu and its tooltip, the title in export
// captions, the overview's canvas row labels (cut by grapheme). A U+202E in any of them reaches
// no character outside it.
import { renderApp } from "../../js/app";
import { decodeEmbedded } from "../../js/saved";
import { exportCaption } from "../../js/views/head/head_scale";
import { rowLabel } from "../../js/views/overview/overview_draw";
import { listeners } from "../../js/views/common";
import { rankSelect, rankWords } from "../../js/views/model/model_stats";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

const RLO = "\u202e", FSI = "\u2068", PDI = "\u2069";
const EMBED = new Set(["\u202a", "\u202b", "\u202d", "\u202e"]);
const ISOLATE = new Set(["\u2066", "\u2067", "\u2068"]);

/** tests/hostile_tokens.py's bidi_leaks: a control reaches a character outside every isolate. */
function leaks(text: string): boolean {
  const stack: ("e" | "i")[] = [];
  for (const ch of text) {
    if (EMBED.has(ch)) stack.push("e");
    else if (ISOLATE.has(ch)) stack.push("i");
    else if (ch === "\u202c") { if (stack[stack.length - 1] === "e") stack.pop(); }
    else if (ch === PDI) { const at = stack.lastIndexOf("i"); if (at >= 0) stack.length = at; }
    else if (!stack.includes("i") && stack.length) return true;
  }
  return stack.length > 0 && !stack.includes("i");
}

describe("quoted texts are isolates", () => {
  it("each _meta note is its own isolate: one note cannot reverse the next", () => {
    const f = makeFixture();
    const ctx = viewContext(f);
    const notes = [`first ${RLO}reversed`, "attnscope's own note", `stray closer${PDI}${PDI} then ${RLO}`];
    renderApp({ meta: { ...f.meta, notes }, store: ctx.store, data: ctx.data, el: ctx.root });
    const text = ctx.root.querySelector(".attnscope-notes")?.textContent ?? "";
    expect(text).toBe(`${FSI}first ${RLO}reversed\u202c${PDI} ${FSI}attnscope's own note${PDI} ${FSI}stray closer then ${RLO}\u202c${PDI}`);
    expect(leaks(text)).toBe(false);
    expect(leaks(notes.join(" "))).toBe(true); // what joining them raw did
  });

  it("a scan's column names in the rank menu and its tooltip", () => {
    const evil = { name: `scan:x${RLO}yz`, label: `lab${RLO}el`, formula: `f${RLO}`, source: `s${RLO}`, inputs: 3 };
    const plain = { name: "scan:ok", label: `ok ${RLO}label`, formula: "", source: "" };
    const f = makeFixture();
    const { store } = viewContext(f);
    const L = listeners();
    const sel = rankSelect(L, store, [evil, plain]);
    const options = [...sel.options].slice(1);
    for (const o of options) {
      expect(leaks(o.textContent ?? "")).toBe(false);
      expect(leaks(o.title)).toBe(false);
      expect(o.title).toContain(FSI);
    }
    expect(options[0]?.textContent).toBe(`rank: ${FSI}scan:x${RLO}yz\u202c${PDI} · mean over 3 inputs`);
    expect(rankWords(plain)).toBe(`rank: ${FSI}ok ${RLO}label\u202c${PDI}`);
    L.clear();
  });

  it("the model's name in an export caption", () => {
    const caption = exportCaption(`ev${RLO}il · 2 layers × 3 heads`, 1, [0, 1, 2], 3, `q${RLO}`);
    expect(caption.startsWith(`${FSI}ev${RLO}il\u202c${PDI} · layer 1 · all 3 heads · query`)).toBe(true);
    expect(leaks(caption)).toBe(false);
  });

  it("a saved chunk's own error, shown after \"Could not load …:\"", async () => {
    const { error } = await decodeEmbedded("top:self:0", { error: `gone${RLO}` }, makeFixture().meta);
    expect(error).toBe(`${FSI}gone${RLO}\u202c${PDI}`);
  });

  it("the overview's row labels: isolated, cut by grapheme, never inside a surrogate pair", () => {
    expect(rowLabel(7, `a${RLO}b`)).toBe(`7 ${FSI}a${RLO}b\u202c${PDI}`);
    const emoji = "\u{1F469}\u200D\u{1F469}\u200D\u{1F467}".repeat(30); // 30 family emoji, 240 UTF-16 units
    const cut = rowLabel(12345, emoji);
    expect(leaks(cut)).toBe(false);
    expect(cut).toMatch(/…\u2069$/);
    // No lone surrogate: every code unit pairs up (what .slice(0, 24) broke).
    expect(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(cut)).toBe(false);
    expect(cut.replace(/[\u2068\u2069…]|^12345 /g, "").length % 8).toBe(0); // whole emoji only
  });
});
