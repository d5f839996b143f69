// The widget's synced traits as the front end receives them, and the part of a
// model the binding uses: anywidget's model has it, and so does the exported
// page's in-page host (js/host.ts).
import type { AnyModel } from "@anywidget/types";
import type { SelectionTraits } from "./selection";
import type { EmbeddedChunk, Meta } from "./wire/types";

/**
 * docs/protocol.md, "Synced traits": the selection, `_meta` (an empty dict until a trace is
 * set) and `_saved` (the first screen's chunks; absent from exported pages and older widgets).
 */
export type WidgetTraits = SelectionTraits & { _meta: Meta; _saved?: Record<string, EmbeddedChunk> };

/** What the binding calls on a model, typed as anywidget types its own. */
export type ModelHost = Pick<AnyModel<WidgetTraits>, "get" | "set" | "on" | "off" | "save_changes" | "send">;
