// attnscope's anywidget module (`_esm`). anywidget imports a widget's module afresh for every
// widget and the page keeps each one (anywidget #613), so this one is small: the front end's
// modules travel in the model's `_bundle` trait ({file: deflate-raw base64 of its text}: the
// widget's entry and the views it offers) and are imported once per page, each checked against
// the SHA-256 this loader was built with, and a view's module only when the view is first shown.
import { CodeRefused, type CodeManifest, type CodeTexts, createLinker, isUnit, type Linker, takesViews } from "./link";
import { sha256Hex } from "./sha256";
import { unpackText } from "./unpack";

declare const __ATTNSCOPE_CODE__: CodeManifest; // js/build.mjs defines it
const MANIFEST = __ATTNSCOPE_CODE__;
const BUNDLE = "_bundle";
// jupyterlab-manager keeps a closed widget's model until the page reloads (a kernel signal holds
// its comm): let go of its large state when it closes.
const RELEASED = [BUNDLE, "_saved", "_meta"];

interface Model {
  get(name: string): unknown;
  set(name: string, value: unknown, options?: object): void;
  on(event: string, callback: () => void): void;
}
interface RenderProps { model: Model; el: HTMLElement }
interface WidgetModule { default: { render(props: RenderProps): unknown }; setViewLoader(load: (unit: string) => Promise<unknown>): void }

interface PageWide { models: Set<Model>; linker: Linker }

/** The page's one linker for this build, over the `_bundle` of every open attnscope widget. */
function pageWide(): PageWide {
  const key = Symbol.for(`attnscope.code.${MANIFEST.digest}`);
  const shared = globalThis as unknown as Record<symbol, PageWide | undefined>;
  let wide = shared[key];
  if (!wide) {
    const models = new Set<Model>();
    wide = { models, linker: createLinker(MANIFEST, () => [...models].map((m) => m.get(BUNDLE) as CodeTexts | null), sha256Hex, unpackText) };
    shared[key] = wide;
  }
  return wide;
}

function refusal(el: HTMLElement, error: unknown): () => void {
  const box = document.createElement("div");
  box.className = "attnscope attnscope-error";
  box.setAttribute("role", "alert");
  box.dataset.testid = "code-refused";
  const why = error instanceof CodeRefused ? error.message : `its code failed to load (${(error as Error)?.message ?? error})`;
  box.textContent = `attnscope: this widget cannot be drawn: ${why}. Re-run the cell with attnscope installed to draw it.`;
  el.append(box);
  return () => box.remove();
}

export default {
  initialize({ model }: { model: Model }) {
    const wide = pageWide();
    wide.models.add(model);
    model.on("destroy", () => {
      wide.models.delete(model);
      for (const name of RELEASED) model.set(name, null, { silent: true });
    });
  },
  async render(props: RenderProps) {
    const wide = pageWide();
    wide.models.add(props.model);
    try {
      const widget = (await wide.linker.module(MANIFEST.entries.widget, (ns) => takesViews(ns) && typeof (ns.default as { render?: unknown })?.render === "function")) as unknown as WidgetModule;
      widget.setViewLoader((unit) => {
        const file = MANIFEST.units[unit];
        if (!file) return Promise.reject(new Error(`attnscope has no view ${unit}`));
        return wide.linker.module(file, isUnit).then((m) => m.default);
      });
      return widget.default.render(props);
    } catch (e) {
      return refusal(props.el, e);
    }
  },
};
