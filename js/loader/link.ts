// Imports attnscope's split front end (js/build.mjs) from module texts, in a page or a notebook:
// each text is checked against the SHA-256 its build recorded before any of it runs, and its
// imports of other modules ("./shared-X.js") are pointed at their own blob URLs (a blob-URL
// module cannot resolve a relative import). One check and one URL per module and page.

/** What js/build.mjs records of the split build; the loader carries it, never the texts. */
export interface CodeManifest {
  /** Digest of the whole build: pages share its modules under it. */
  digest: string;
  /** Each module file: the SHA-256 (hex) and UTF-8 size of its text, and the files it imports. */
  files: Record<string, { sha256: string; bytes: number; imports: string[] }>;
  /** The entry modules: the anywidget module and the page's. */
  entries: { widget: string; page: string };
  /** The module of each view unit (js/view_units.ts). */
  units: Record<string, string>;
}

/** Module texts by file name, as a widget's `_bundle` or a page's code element holds them (packed). */
export type CodeTexts = Record<string, unknown>;
export type Hash = (text: string) => Promise<string | null>;
/** A module's text from what was offered for it, at most `limit` bytes (js/loader/unpack.ts). */
export type Unpack = (offered: string, limit: number) => Promise<string>;
type Namespace = Record<string, unknown>;

/** The code offered for a module was refused: nothing of it ran. */
export class CodeRefused extends Error {}

export interface Linker {
  /** The module `file`, imported once per page; `entry` says whether its exports are what was asked for. */
  module(file: string, entry: (ns: Namespace) => boolean): Promise<Namespace>;
}

/**
 * A linker over the texts that `sources()` offers, in order of preference: for each module the
 * first text whose hash matches the manifest is used; none matching refuses the module (and so
 * everything that imports it). A module whose exports miss their entry point is not kept.
 * `unpack` turns what was offered into text (inflating it, within the module's size).
 */
export function createLinker(
  manifest: CodeManifest,
  sources: () => Iterable<CodeTexts | null | undefined>,
  hash: Hash,
  unpack: Unpack = async (text) => text,
): Linker {
  const urls = new Map<string, Promise<string>>();
  const modules = new Map<string, Promise<Namespace>>();

  async function checkedText(file: string): Promise<string> {
    const spec = manifest.files[file];
    if (!spec) throw new CodeRefused(`attnscope's build ${manifest.digest} has no module ${file}`);
    let offered = 0;
    for (const texts of sources()) {
      const packed = texts && typeof texts === "object" ? texts[file] : undefined;
      if (typeof packed !== "string") continue;
      offered++;
      const text = await unpack(packed, spec.bytes).catch(() => null);
      if (text === null) continue; // not a packed text, or longer than the module: not the build's
      const digest = await hash(text);
      if (digest === null) throw new CodeRefused("this page can compute no SHA-256 to check attnscope's code against, so it runs none of it");
      if (digest === spec.sha256) return text;
    }
    throw new CodeRefused(offered
      ? `the code offered for ${file} does not match attnscope's build ${manifest.digest} (its SHA-256 differs, or it is no packed module of that build), so none of it was run`
      : `no code for ${file} was given (the widget's _bundle is missing or empty)`);
  }

  function urlOf(file: string, path: readonly string[]): Promise<string> {
    if (path.includes(file)) return Promise.reject(new CodeRefused(`attnscope's modules import each other in a cycle: ${[...path, file].join(" -> ")}`));
    let url = urls.get(file);
    if (!url) {
      url = (async () => {
        let text = await checkedText(file);
        for (const dep of manifest.files[file]?.imports ?? []) {
          const depUrl = await urlOf(dep, [...path, file]);
          text = text.split(`"./${dep}"`).join(JSON.stringify(depUrl));
        }
        return URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
      })();
      url.catch(() => urls.delete(file));
      urls.set(file, url);
    }
    return url;
  }

  return {
    module(file, entry) {
      let ns = modules.get(file);
      if (!ns) {
        ns = urlOf(file, []).then(async (url) => {
          const m = (await import(/* @vite-ignore */ url)) as Namespace;
          if (!entry(m)) throw new CodeRefused(`attnscope's module ${file} has not the exports it should`);
          return m;
        });
        ns.catch(() => modules.delete(file));
        modules.set(file, ns);
      }
      return ns;
    },
  };
}

/** Whether `ns` is the module of a view unit (its default export draws the view). */
export const isUnit = (ns: Namespace): boolean => typeof ns.default === "function";

/** Whether `ns` is an entry module: it takes a view loader (js/view_units.ts). */
export const takesViews = (ns: Namespace): boolean => typeof ns.setViewLoader === "function";
