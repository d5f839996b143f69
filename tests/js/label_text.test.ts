// Labels as text: bidi controls cannot reach past a label, images cut long labels between
// characters, and SVG text stays well-formed XML whatever a label holds.
import { balanceBidi, fitLabel, isolate, labelElement } from "../../js/label_text";
import { xmlEscape } from "../../js/paint/svg_painter";

const LRE = "\u202a", RLE = "\u202b", PDF = "\u202c", LRO = "\u202d", RLO = "\u202e";
const LRI = "\u2066", RLI = "\u2067", FSI = "\u2068", PDI = "\u2069";

/**
 * The explicit embedding stack after each character of `s`, by the Unicode bidi algorithm's
 * rules X1-X8 (written here from the standard, apart from label_text.ts): "e" for an
 * embedding or override, "i" for an isolate. Overflow (depth > 125) does not arise here.
 */
function depths(s: string): number[] {
  const stack: string[] = [];
  const out: number[] = [];
  for (const ch of s) {
    if ([LRE, RLE, LRO, RLO].includes(ch)) stack.push("e");
    else if ([LRI, RLI, FSI].includes(ch)) stack.push("i");
    else if (ch === PDF) { if (stack[stack.length - 1] === "e") stack.pop(); }
    else if (ch === PDI) { const at = stack.lastIndexOf("i"); if (at >= 0) stack.length = at; }
    else if (/[\n\r\x1c-\x1e\x85\u2029]/.test(ch)) stack.length = 0;
    out.push(stack.length);
  }
  return out;
}

/** Whether text written after `label` (isolated as the views do) is at the base level. */
const contained = (label: string): boolean => {
  const d = depths(`a ${isolate(label)} b`);
  return d[d.length - 1] === 0 && d[d.length - 2] === 0;
};

describe("balanceBidi", () => {
  it("returns text without controls unchanged", () => {
    for (const s of ["cat", "שלום", "مرحبا", "a\u200db", "\u{1F469}\u200d\u{1F467}"]) expect(balanceBidi(s)).toBe(s);
  });

  it("closes what a label opens and drops closers with nothing to close", () => {
    expect(balanceBidi(`abc${RLO}def`)).toBe(`abc${RLO}def${PDF}`);
    expect(balanceBidi(`${RLE}x`)).toBe(`${RLE}x${PDF}`);
    expect(balanceBidi(`${RLI}x`)).toBe(`${RLI}x${PDI}`);
    expect(balanceBidi(`stray${PDF}${PDI}`)).toBe("stray");
    expect(balanceBidi(`${RLI}a${RLE}b${PDI}c`)).toBe(`${RLI}a${RLE}b${PDI}c`); // the PDI closes the RLE too
    expect(balanceBidi(`${LRE}${FSI}x${PDF}`)).toBe(`${LRE}${FSI}x${PDI}${PDF}`); // a PDF cannot leave an isolate
  });

  it("keeps a label one paragraph", () => {
    expect(balanceBidi(`a\u2029${RLO}b`)).toBe(`a ${RLO}b${PDF}`);
    expect(balanceBidi("line\r\nbreak")).toBe("line  break");
  });
});

describe("isolate", () => {
  it("contains every hostile control sequence", () => {
    for (const label of [
      `abc${RLO}def`, `${RLE}unterminated`, `${RLI}unterminated`, `stray${PDF}${PDI}`, PDI,
      `${PDI}${RLO}after a stray PDI`, `a\u2029${RLO}b`, `${FSI}${PDI}${PDI}${RLO}`, RLO.repeat(50),
    ]) {
      expect(contained(label), JSON.stringify(label)).toBe(true);
    }
  });

  it("contains random mixes of controls, letters and separators", () => {
    const alphabet = [LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, "a", "א", "1", " ", "\u2029", "\n"];
    let seed = 7;
    const next = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    for (let t = 0; t < 2000; t++) {
      const label = Array.from({ length: 1 + next(12) }, () => alphabet[next(alphabet.length)]).join("");
      expect(contained(label), JSON.stringify(label)).toBe(true);
    }
  });

  it("is what the DOM gets as a <bdi>", () => {
    const el = labelElement(`abc${RLO}def`);
    expect(el.tagName).toBe("BDI");
    expect(el.textContent).toBe(`abc${RLO}def${PDF}`);
  });
});

describe("fitLabel", () => {
  it("keeps short labels and cuts long ones to the limit", () => {
    expect(fitLabel("cat", 5)).toBe("cat");
    expect(fitLabel("A".repeat(10_000), 5)).toBe("AAAA…");
  });

  it("never cuts inside a character a reader sees as one", () => {
    const family = "\u{1F469}\u200d\u{1F469}\u200d\u{1F467}\u200d\u{1F466}";
    expect(fitLabel(family.repeat(4), 3)).toBe(`${family}${family}…`);
    const zalgo = `Z${"\u0336\u0337".repeat(10)}`;
    expect(fitLabel(zalgo.repeat(3), 2)).toBe(`${zalgo}…`);
  });
});

describe("xmlEscape", () => {
  const forbidden = (s: string): boolean => /[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/.test(s);

  it("escapes markup", () => {
    expect(xmlEscape(`<img src="x" onerror='y'>&`)).toBe("&lt;img src=&quot;x&quot; onerror=&apos;y&apos;&gt;&amp;");
  });

  it("shows C0 controls as their pictures and replaces other characters XML forbids", () => {
    expect(xmlEscape("a\x00b\x1b[0m\x0b\x0c")).toBe("a␀b␛[0m␋␌");
    expect(xmlEscape("\ufffe\uffff")).toBe("\ufffd\ufffd");
    expect(xmlEscape("x\ud800y\udfff")).toBe("x\ufffdy\ufffd");
    expect(xmlEscape("\t\n\r")).toBe("\t\n\r"); // allowed in XML
    const all = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)).join("");
    expect(forbidden(xmlEscape(all))).toBe(false);
  });

  it("keeps surrogate pairs (emoji) whole", () => {
    const emoji = "\u{1F44D}\u{1F3FD}\u{1F1FA}\u{1F1F3}";
    expect(xmlEscape(emoji)).toBe(emoji);
  });
});
