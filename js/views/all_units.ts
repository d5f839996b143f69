// Every view's unit registered at once: for code that bundles all views statically (tests).
import { registerViewUnit } from "../view_units";
import renderCompareNeuron from "./compare/compare_neuron_unit";
import renderHeadView from "./head/head_unit";
import renderImageView from "./image/image_unit";
import renderModelView from "./model/model_unit";
import renderNeuronView from "./neuron/neuron_unit";

export function registerAllViewUnits(): void {
  registerViewUnit("head", renderHeadView);
  registerViewUnit("model", renderModelView);
  registerViewUnit("neuron", renderNeuronView);
  registerViewUnit("image", renderImageView);
  registerViewUnit("neuron_diff", renderCompareNeuron);
}
