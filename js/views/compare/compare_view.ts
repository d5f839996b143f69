// Which chunks a view of a comparison gets: the usual view over
// one side's chunks, or, for the neuron view of A − B, A and B side by side.
import { sideData } from "../../compare_data";
import type { Cleanup, CompareSide, ViewContext, ViewName } from "../../wire/types";

/**
 * Render view `name` of `side` (null: not a comparison) with `render`, the renderer of
 * `unitOf(name, side)` (js/view_units.ts); the view's host says which side it shows (`data-side`).
 */
export function renderSide(name: ViewName, render: (ctx: ViewContext) => Cleanup, ctx: ViewContext, side: CompareSide | null): Cleanup {
  if (!side) return render(ctx);
  ctx.root.dataset.side = side;
  if (name === "neuron" && side === "diff") return render(ctx); // A and B side by side
  return render({ ...ctx, data: sideData(ctx.data, side), side });
}
