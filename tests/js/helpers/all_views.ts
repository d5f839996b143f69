// vitest setup: the tests mount the app with every view's code already in, as a page built
// with all views has it once loaded (js/view_units.ts); the lazy path has its own test.
import { registerAllViewUnits } from "../../../js/views/all_units";

registerAllViewUnits();
