// The exported page's one classic script: imports the page's modules from the texts the page
// holds (`<script type="application/json" id="attnscope-code">`, {file: deflate-raw base64 of
// its text}: the page entry and the views it shows), each checked against the SHA-256 its build
// recorded, then draws.
import { type CodeManifest, type CodeTexts, createLinker, isUnit, takesViews } from "./link";
import { sha256Hex } from "./sha256";
import { unpackText } from "./unpack";

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

function load(): void {
  let texts: CodeTexts = {};
  try {
    texts = JSON.parse(document.getElementById("attnscope-code")?.textContent || "{}") as CodeTexts;
  } catch {
    // refused below: no text checks
  }
  const linker = createLinker(MANIFEST, () => [texts], sha256Hex, unpackText);
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

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", load, { once: true });
else load();
