// The whole front end in one module (static/widget.js): every view's code bundled in, for hosts
// that import a file rather than attnscope's loader (the Colab-like test host).
import { registerAllViewUnits } from "./views/all_units";
import widget from "./widget";

registerAllViewUnits();
export default widget;
