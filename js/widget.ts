// The anywidget entry. anywidget's model already is a ModelHost, so rendering is mounting.
import type { Render } from "@anywidget/types";
import { mount } from "./bind";
import type { ModelHost, WidgetTraits } from "./traits";

// The loader (js/loader/notebook.ts) hands the app the way to each view's code.
export { setViewLoader } from "./view_units";

export default {
  render: ({ model, el }: { model: ModelHost; el: HTMLElement }) => mount(model, el),
} satisfies { render: Render<WidgetTraits> };
