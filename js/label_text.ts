// How a token label becomes text on the screen, in tooltips and in images.
//
// Token labels are the model's text: they may hold bidi controls (U+202E RIGHT-TO-LEFT
// OVERRIDE, an embedding never closed, a stray POP DIRECTIONAL ISOLATE) that would reorder
// whatever is drawn after them. Every label is shown as an isolate: its controls balanced so
// they end where the label ends, and wrapped in an isolate (a <bdi> in the DOM; FSI … PDI in a
// string: tooltips, canvas text, SVG), so it takes its own direction and cannot touch its
// neighbours.

const EMBEDDING_OPENERS = new Set(["\u202a", "\u202b", "\u202d", "\u202e"]); // LRE RLE LRO RLO
const ISOLATE_OPENERS = new Set(["\u2066", "\u2067", "\u2068"]); // LRI RLI FSI
const PDF = "\u202c";
const FSI = "\u2068";
const PDI = "\u2069";
// Paragraph separators end every embedding and isolate (the bidi algorithm's class B).
const PARAGRAPH = /[\n\r\x1c-\x1e\x85\u2029]/;
const ANY_CONTROL = /[\u202a-\u202e\u2066-\u2069\n\r\x1c-\x1e\x85\u2029]/;

/**
 * `s` with its bidi controls balanced: a PDF or PDI with nothing to close is dropped, and
 * whatever is still open at the end is closed there, innermost first. A paragraph separator
 * becomes a space, so the label stays one paragraph and its closers reach what it opened.
 * Text without controls comes back as it is.
 */
export function balanceBidi(s: string): string {
  if (!ANY_CONTROL.test(s)) return s;
  const open: ("e" | "i")[] = []; // e: embedding or override, i: isolate
  let out = "";
  for (const ch of s) {
    if (EMBEDDING_OPENERS.has(ch)) open.push("e");
    else if (ISOLATE_OPENERS.has(ch)) open.push("i");
    else if (ch === PDF) {
      // A PDF closes an embedding opened since the last isolate, or nothing.
      if (open[open.length - 1] !== "e") continue;
      open.pop();
    } else if (ch === PDI) {
      // A PDI closes the last isolate and every embedding opened inside it, or nothing.
      const at = open.lastIndexOf("i");
      if (at < 0) continue;
      open.length = at;
    } else if (PARAGRAPH.test(ch)) {
      out += " ";
      continue;
    }
    out += ch;
  }
  for (let k = open.length - 1; k >= 0; k--) out += open[k] === "e" ? PDF : PDI;
  return out;
}

/** `s` as a first-strong isolate (FSI … PDI): the string form of `<bdi>` / `dir="auto"`. */
export function isolate(s: string): string {
  return FSI + balanceBidi(s) + PDI;
}

/** A `<bdi>` holding the balanced label: isolated from the text around it in the DOM. */
export function labelElement(s: string): HTMLElement {
  const el = document.createElement("bdi");
  el.textContent = balanceBidi(s);
  return el;
}

/** Most characters (graphemes) of a label an image shows; the screen ellipsizes with CSS. */
export const IMAGE_LABEL_CHARS = 24;

let graphemes: Intl.Segmenter | null = null;

/**
 * `s` cut to `max` user-perceived characters with "…" for the rest, never inside an emoji
 * sequence or between a letter and its combining marks; for images, where nothing clips text.
 */
export function fitLabel(s: string, max = IMAGE_LABEL_CHARS): string {
  if (s.length <= max) return s;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  const kept: string[] = [];
  for (const { segment } of graphemes.segment(s)) {
    if (kept.length === max) return `${kept.slice(0, max - 1).join("")}…`;
    kept.push(segment);
  }
  return s;
}

/** A label as an image draws it: cut to fit, then isolated. */
export function imageLabel(s: string, max = IMAGE_LABEL_CHARS): string {
  return isolate(fitLabel(s, max));
}

/** `parts` joined by `sep`, each part a string or a run of strings and nodes (a label's <bdi>). */
export function joinParts(parts: readonly (string | readonly (string | Node)[])[], sep: string): (string | Node)[] {
  const out: (string | Node)[] = [];
  parts.forEach((part, i) => {
    if (i) out.push(sep);
    if (typeof part === "string") out.push(part);
    else out.push(...part);
  });
  return out;
}
