// anywidget glue (placeholder until the views land): shows the trace's title.
import type { Render } from "@anywidget/types";

interface Traits {
  _meta: { title?: string };
}

const render: Render<Traits> = ({ model, el }) => {
  const title = document.createElement("div");
  title.className = "attnscope-title";
  const update = (): void => {
    title.textContent = model.get("_meta").title ?? "attnscope";
  };
  update();
  el.classList.add("attnscope");
  el.append(title);
  model.on("change:_meta", update);
  return () => model.off("change:_meta", update);
};

export default { render };
