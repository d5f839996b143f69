// Bundles the front end into src/attnscope/static/: the anywidget module
// (widget.js + widget.css) and the self-contained page host (standalone.js)
// that `save_html` inlines. No CDN: everything the browser runs is in here,
// the selection schema (src/attnscope/encode/selection.json, imported by
// js/selection.ts) included: esbuild bundles JSON imports as modules.
import { build } from "esbuild";
import { mkdirSync } from "node:fs";

const outdir = "src/attnscope/static";
mkdirSync(outdir, { recursive: true });
const common = { bundle: true, minify: true, target: "es2020", logLevel: "warning" };
await build({ ...common, entryPoints: ["js/widget.ts"], format: "esm", outfile: `${outdir}/widget.js` });
await build({ ...common, entryPoints: ["js/standalone.ts"], format: "iife", outfile: `${outdir}/standalone.js` });
// Whitespace and comments only (colours and selectors stay as written): every page and widget inlines it.
await build({ entryPoints: ["js/style.css"], bundle: false, minifyWhitespace: true, logLevel: "warning", outfile: `${outdir}/widget.css` });
