// Bundles the front end into src/attnscope/static/. No CDN: everything the browser runs is in
// here, the selection schema (src/attnscope/encode/selection.json, imported by js/selection.ts)
// included: esbuild bundles JSON imports as modules.
//
// - code/: the front end split by view (js/view_units.ts): the widget's and the page's entry
//   modules, one module per view unit, and the code they share; code/manifest.json records each
//   module's SHA-256, size and imports. A page (display/page.py) and a widget's `_bundle` carry
//   only the modules of the views they show, deflate-raw compressed.
// - loader.js: the anywidget module (`_esm`), page_loader.js: the page's script. Both carry the
//   manifest and import the modules from their texts after checking them (js/loader/link.ts).
// - widget.js: the whole front end in one module, for hosts that import a file.
// - widget.css: every page and widget inlines it.
// - the derive worker (js/derive_worker.ts) is no file: its text is built first and defined into
//   the page's code as __ATTNSCOPE_DERIVE_WORKER__.
// - vendor/: require.js, @jupyter-widgets/html-manager's embed-amd.js and anywidget, copied as
//   published, so `python -m attnscope share` inlines them from an installed wheel too
//   (src/attnscope/display/share.py); vendor/NOTICE.txt names each with its version and licence.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname } from "node:path";

const outdir = "src/attnscope/static";
const codedir = `${outdir}/code`;
rmSync(codedir, { recursive: true, force: true });
mkdirSync(codedir, { recursive: true });
const common = { bundle: true, minify: true, target: "es2020", logLevel: "warning" };
// The page's derive worker (js/derive_worker.ts) as text: js/derive_off_thread.ts starts it from a blob:
// URL, so it lives inside the checked page module and no worker file is fetched.
const worker = await build({ ...common, entryPoints: ["js/derive_worker.ts"], format: "iife", write: false });
const workerDefine = { __ATTNSCOPE_DERIVE_WORKER__: JSON.stringify(worker.outputFiles[0].text) };

const UNITS = {
  head: "js/views/head/head_unit.ts",
  model: "js/views/model/model_unit.ts",
  neuron: "js/views/neuron/neuron_unit.ts",
  image: "js/views/image/image_unit.ts",
  neuron_diff: "js/views/compare/compare_neuron_unit.ts",
};
const split = await build({
  ...common,
  define: workerDefine,
  entryPoints: [
    { in: "js/widget.ts", out: "widget" },
    { in: "js/standalone.ts", out: "page" },
    ...Object.entries(UNITS).map(([unit, path]) => ({ in: path, out: `view_${unit}` })),
  ],
  format: "esm",
  splitting: true,
  outdir: codedir,
  chunkNames: "shared-[hash]",
  metafile: true,
});
const sha256 = (text) => createHash("sha256").update(text, "utf8").digest("hex");
const files = {};
for (const [path, out] of Object.entries(split.metafile.outputs)) {
  if (!path.endsWith(".js")) continue;
  const imports = out.imports.map((i) => {
    if (i.kind !== "import-statement") throw new Error(`${path}: ${i.kind} of ${i.path}: the loader links static imports only`);
    return basename(i.path);
  });
  const text = readFileSync(path, "utf8");
  for (const dep of imports) {
    if (!text.includes(`"./${dep}"`)) throw new Error(`${path} imports ${dep} in a form the loader does not rewrite`);
  }
  files[basename(path)] = { sha256: sha256(text), bytes: Buffer.byteLength(text, "utf8"), imports };
}
const manifest = {
  digest: sha256(JSON.stringify(files)).slice(0, 16),
  files,
  entries: { widget: "widget.js", page: "page.js" },
  units: Object.fromEntries(Object.keys(UNITS).map((u) => [u, `view_${u}.js`])),
};
writeFileSync(`${codedir}/manifest.json`, `${JSON.stringify(manifest, null, 1)}\n`);
const define = { __ATTNSCOPE_CODE__: JSON.stringify(manifest) };
await build({ ...common, define, entryPoints: ["js/loader/notebook.ts"], format: "esm", outfile: `${outdir}/loader.js` });
await build({ ...common, define, entryPoints: ["js/loader/page.ts"], format: "iife", outfile: `${outdir}/page_loader.js` });
await build({ ...common, define: workerDefine, entryPoints: ["js/widget_all.ts"], format: "esm", outfile: `${outdir}/widget.js` });
rmSync(`${outdir}/standalone.js`, { force: true }); // the page was one script before code/
// Whitespace and comments only (colours and selectors stay as written): every page and widget inlines it.
await build({ entryPoints: ["js/style.css"], bundle: false, minifyWhitespace: true, logLevel: "warning", outfile: `${outdir}/widget.css` });

// The widget manager `share` inlines into a page, as published (paths as under node_modules).
const vendordir = `${outdir}/vendor`;
rmSync(vendordir, { recursive: true, force: true });
const VENDORED = {
  requirejs: "requirejs/require.js",
  "@jupyter-widgets/html-manager": "@jupyter-widgets/html-manager/dist/embed-amd.js",
  anywidget: "anywidget/dist/index.js",
};
const notice = ["Third-party files copied unchanged from their npm packages, for pages that draw offline:", ""];
for (const [name, file] of Object.entries(VENDORED)) {
  const target = `${vendordir}/${file}`;
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(`node_modules/${file}`, target);
  const meta = JSON.parse(readFileSync(`node_modules/${name}/package.json`, "utf8"));
  const home = meta.homepage ?? meta.repository?.url ?? `https://www.npmjs.com/package/${meta.name}`;
  notice.push(`${file}: ${meta.name} ${meta.version}, ${meta.license} licence (${home})`);
}
writeFileSync(`${vendordir}/NOTICE.txt`, `${notice.join("\n")}\n`);
