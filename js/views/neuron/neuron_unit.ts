// The neuron view as a unit of its own (js/view_units.ts): the module the loader imports when the view is first shown.
export { renderNeuronView as default } from "./neuron";
