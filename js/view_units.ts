// Each view's code is a unit of its own (js/build.mjs splits the bundle by it), so a page or a
// widget carries and compiles only the views it shows. The app asks here for a view's renderer:
// at once when its unit is already in, else through the loader the host installed
// (js/loader/link.ts imports the unit's module from the text it was given).
import type { Cleanup, ViewContext, ViewName } from "./wire/types";

export type ViewRenderer = (ctx: ViewContext) => Cleanup;
/** A loadable unit: a view, or the neuron view of a comparison's A − B (A and B side by side). */
export type ViewUnit = ViewName | "neuron_diff";

const ready = new Map<ViewUnit, ViewRenderer>();
let loader: ((unit: ViewUnit) => Promise<ViewRenderer>) | null = null;

/** Make a unit's renderer available at once (statically bundled code, tests). */
export function registerViewUnit(unit: ViewUnit, render: ViewRenderer): void {
  ready.set(unit, render);
}

/** How units not yet in are brought in (the page's or the widget's loader). */
export function setViewLoader(load: (unit: ViewUnit) => Promise<ViewRenderer>): void {
  loader = load;
}

/** The unit that draws view `name` of a comparison's `side` (null: not a comparison). */
export function unitOf(name: ViewName, side: string | null): ViewUnit {
  return name === "neuron" && side === "diff" ? "neuron_diff" : name;
}

/** The unit's renderer: itself when loaded, else a promise of it (rejected when no loader can bring it). */
export function viewRenderer(unit: ViewUnit): ViewRenderer | Promise<ViewRenderer> {
  const render = ready.get(unit);
  if (render) return render;
  if (!loader) return Promise.reject(new Error(`the code of the ${unit} view is not in this page`));
  return loader(unit).then((r) => {
    ready.set(unit, r);
    return r;
  });
}
