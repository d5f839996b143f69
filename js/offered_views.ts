// Which views a widget or page offers: the app's tabs, the model view's hint and
// the glue's trait writes all ask here.
import { VIEWS } from "./selection";
import type { Meta, ViewName } from "./wire/types";

/**
 * The views `meta` offers, in tab order: known names only, each once; all of them when absent or
 * empty. The image view only where the trace has images (`_meta.images`).
 */
export function offeredViews(meta: Meta): ViewName[] {
  const shows = (v: ViewName): boolean => v !== "image" || !!meta.images;
  const known = (meta.views ?? []).filter((v, i, list) => VIEWS.includes(v) && list.indexOf(v) === i && shows(v));
  return known.length ? known : VIEWS.filter(shows);
}
