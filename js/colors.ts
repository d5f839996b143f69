// Colours: head palette, colour scales and the theme colours canvases use.

/** Okabe–Ito then Paul Tol's colour-blind-safe colours; generated hues after that. */
const BASE = [
  "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
  "#882255", "#44AA99", "#999933", "#AA4499",
];

/** A colour per head, distinct however many heads (golden-angle hues past the base palette). */
export function headColor(h: number, dark = false): string {
  if (h < BASE.length) {
    const c = BASE[h] as string;
    return dark && c === "#000000" ? "#BBBBBB" : c;
  }
  const i = h - BASE.length;
  const hue = (i * 137.508 + 20) % 360;
  const light = [0.62, 0.5, 0.74][i % 3] as number;
  const chroma = [0.15, 0.12, 0.1][Math.floor(i / 3) % 3] as number;
  return oklchToHex(dark ? Math.min(light + 0.08, 0.85) : light, chroma, hue);
}

export function oklchToHex(L: number, C: number, hDeg: number): string {
  const h = (hDeg * Math.PI) / 180;
  const a = C * Math.cos(h);
  const b = C * Math.sin(h);
  const l_ = L + 0.3963377774 * a + 0.2158037573 * b;
  const m_ = L - 0.1055613458 * a - 0.0638541728 * b;
  const s_ = L - 0.0894841775 * a - 1.291485548 * b;
  const l = l_ ** 3, m = m_ ** 3, s = s_ ** 3;
  const rgb = [
    4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
    -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
    -0.0041960863 * l - 0.7034186147 * m + 1.707614701 * s,
  ];
  return `#${rgb.map((v) => {
    const c = v <= 0.0031308 ? 12.92 * v : 1.055 * Math.max(v, 0) ** (1 / 2.4) - 0.055;
    return Math.round(Math.min(1, Math.max(0, c)) * 255).toString(16).padStart(2, "0");
  }).join("")}`;
}

export type RGB = [number, number, number];

export function parseColor(text: string, fallback: RGB = [0, 0, 0]): RGB {
  const t = text.trim();
  let m = /^#([0-9a-f]{3})$/i.exec(t);
  if (m?.[1]) return [...m[1]].map((c) => parseInt(c + c, 16)) as RGB;
  m = /^#([0-9a-f]{6})/i.exec(t);
  if (m?.[1]) return [0, 2, 4].map((i) => parseInt(m![1]!.slice(i, i + 2), 16)) as RGB;
  m = /^rgba?\(([^)]+)\)/i.exec(t);
  if (m?.[1]) {
    const parts = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    if (parts.length >= 4 && parts[3] === 0) return fallback;
    if (parts.length >= 3 && parts.slice(0, 3).every(Number.isFinite)) return parts.slice(0, 3) as RGB;
  }
  return fallback;
}

export function luminance([r, g, b]: RGB): number {
  const f = (v: number): number => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}

/** Black or white, whichever contrasts more with `background` (WCAG contrast ratio). */
export function textOn(background: string): "#000000" | "#ffffff" {
  const L = luminance(parseColor(background, [0, 0, 0]));
  return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? "#000000" : "#ffffff";
}

export const hex = ([r, g, b]: RGB): string =>
  `#${[r, g, b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("")}`;

/** Colours canvases draw with, read from the root's computed CSS variables. */
export interface ThemeColors {
  dark: boolean;
  fg: RGB;
  bg: RGB;
  muted: RGB;
  accent: RGB;
  neg: RGB;
  pos: RGB;
  grid: RGB;
  font: string;
}

export function readTheme(root: HTMLElement, dark: boolean): ThemeColors {
  const cs = getComputedStyle(root);
  const v = (name: string, fb: RGB): RGB => parseColor(cs.getPropertyValue(name) || "", fb);
  return {
    dark,
    fg: v("--as-fg", dark ? [230, 230, 230] : [30, 30, 30]),
    bg: v("--as-bg", dark ? [17, 17, 17] : [255, 255, 255]),
    muted: v("--as-muted", dark ? [140, 140, 140] : [120, 120, 120]),
    accent: v("--as-accent", dark ? [100, 180, 255] : [25, 100, 200]),
    neg: v("--as-neg", dark ? [80, 150, 255] : [33, 102, 172]),
    pos: v("--as-pos", dark ? [255, 110, 90] : [178, 24, 43]),
    grid: v("--as-grid", dark ? [60, 60, 60] : [220, 220, 220]),
    font: (cs.getPropertyValue("--as-font") || "").trim() || "11px system-ui, sans-serif",
  };
}

export const mix = (a: RGB, b: RGB, t: number): RGB => [0, 1, 2].map((i) => (a[i] as number) + ((b[i] as number) - (a[i] as number)) * t) as RGB;

/** How a heatmap maps a weight (0..1 of its cell's largest) to colour: square root, or log over 2.4 decades. */
export type HeatScale = "linear" | "log";

/**
 * Keys past which a row that spreads its attention has every weight below 1/255
 * of a peak of 1 (a causal model's first query): views then scale each row to
 * its own largest weight by default, and their legends say so.
 */
export const LONG_INPUT = 256;

/** A byte's position on the ramp: a scale of `i / 255` of the largest weight, or a function of the byte. */
export type RampPosition = HeatScale | ((i: number) => number);

/** The weight scale for heatmaps: background → accent (lifted towards white on dark backgrounds). */
export function weightLut(theme: ThemeColors, scale: RampPosition = "linear"): Uint8ClampedArray {
  return rampLut(theme.bg, theme.dark ? mix(theme.accent, [255, 255, 255], 0.45) : theme.accent, scale);
}

/** Position on the colour ramp of byte `i` (i / 255 of the cell's largest weight). */
export function rampPosition(i: number, scale: HeatScale): number {
  if (i <= 0) return 0;
  // log: 1/255 (the faintest byte) sits a little above the background, 1 at the top.
  if (scale === "log") return Math.max(0.08, 1 + Math.log10(i / 255) / Math.log10(255));
  return Math.sqrt(i / 255); // lift faint weights so structure shows
}

/** 256 RGBA entries from `from` to `to` (the sequential scale for weights). */
export function rampLut(from: RGB, to: RGB, scale: RampPosition = "linear"): Uint8ClampedArray {
  const lut = new Uint8ClampedArray(256 * 4);
  for (let i = 0; i < 256; i++) {
    const t = typeof scale === "function" ? scale(i) : rampPosition(i, scale);
    for (let c = 0; c < 3; c++) lut[i * 4 + c] = (from[c] as number) + ((to[c] as number) - (from[c] as number)) * t;
    lut[i * 4 + 3] = 255;
  }
  return lut;
}

/** Diverging colour for v in [-max, max]: neg ← bg → pos (symmetric around 0, scaled to the data). */
export function diverging(v: number, max: number, theme: ThemeColors): string {
  const t = max > 0 ? Math.max(-1, Math.min(1, v / max)) : 0;
  const to = t < 0 ? theme.neg : theme.pos;
  const a = Math.abs(t);
  const mix = (c: number): number => (theme.bg[c] as number) + ((to[c] as number) - (theme.bg[c] as number)) * a;
  return `rgb(${Math.round(mix(0))},${Math.round(mix(1))},${Math.round(mix(2))})`;
}

export const rgba = (c: RGB, a: number): string => `rgba(${c[0]},${c[1]},${c[2]},${a})`;
