// The exported page's one classic script: imports the page's modules from the texts the page
// holds (`<script type="application/json" id="attnscope-code">`, {file: deflate-raw base64 of
// its text}: the page entry and the views it shows), each checked against the SHA-256 its build
// recorded, then draws.
import { type CodeManifest, type CodeTexts, createLinker, isUnit, takesViews } from "./link";
import { sha256Hex } from "./sha256";

declare const __ATTNSCOPE_CODE__: CodeManifest; // js/build.mjs defines it
const MANIFEST = __ATTNSCOPE_CODE__;

interface PageModule { setViewLoader(load: (unit: string) => Promise<unknown>): void; autoRender(): void }

function fail(message: string): void {
  const root = document.getElementById("attnscope-root");
  const box = document.createElement("div");
  box.className = "attnscope attnscope-error";
  box.setAttribute("role", "alert");
  box.textContent = `attnscope: ${message}`;
  root?.append(box);
}

/** The text of deflate-raw, base64 `packed` (the page's chunks travel the same way). */
async function unpack(packed: string): Promise<string> {
  const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>);
  return new Response(stream).text();
}

async function pageTexts(): Promise<CodeTexts> {
  const packed = JSON.parse(document.getElementById("attnscope-code")?.textContent || "{}") as Record<string, unknown>;
  const texts: CodeTexts = {};
  for (const [file, value] of Object.entries(packed)) if (typeof value === "string") texts[file] = await unpack(value);
  return texts;
}

async function load(): Promise<void> {
  let texts: CodeTexts = {};
  try {
    texts = await pageTexts();
  } catch {
    // refused below: no text checks
  }
  const linker = createLinker(MANIFEST, () => [texts], sha256Hex);
  linker.module(MANIFEST.entries.page, (ns) => takesViews(ns) && typeof ns.autoRender === "function").then(
    (ns) => {
      const page = ns as unknown as PageModule;
      page.setViewLoader((unit) => {
        const file = MANIFEST.units[unit];
        if (!file) return Promise.reject(new Error(`attnscope has no view ${unit}`));
        return linker.module(file, isUnit).then((m) => m.default);
      });
      page.autoRender();
    },
    (e: Error) => fail(`this page cannot be drawn: ${e.message}.`),
  );
}

const start = (): void => { void load(); };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, { once: true });
else start();
