// The neuron view of a comparison's A − B as a unit of its own (js/view_units.ts).
export { renderCompareNeuron as default } from "./compare_neuron";
