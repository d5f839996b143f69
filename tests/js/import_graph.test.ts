/// <reference types="vite/client" />
// The front end's import graph, as tests/test_layers.py holds the Python one: no import
// circle (type-only imports included: a circle of types still couples the files), and the
// entries (js/build.mjs's) are imported by nothing but entries. Read from the files' text
// (Vite's import.meta.glob, so the test needs no Node API and js/ sees no Node types).
const SOURCES = import.meta.glob("../../js/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<string, string>;

const IMPORT = /^\s*(?:import|export)\s[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+)"/gms;

/** `a/b/../c` → `a/c` for the paths the glob gives (`../../js/...`, made `js/...`). */
function resolvePath(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const piece of spec.split("/")) {
    if (piece === "..") parts.pop();
    else if (piece !== ".") parts.push(piece);
  }
  return parts.join("/");
}

/** Each file (`js/...`) and the project files it imports. */
function graph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const [path, text] of Object.entries(SOURCES)) {
    const file = path.replace(/^(\.\.\/)+/, "");
    const targets = [...text.matchAll(IMPORT)].map((m) => {
      const target = resolvePath(file, m[1] as string);
      return target.endsWith(".ts") ? target : `${target}.ts`;
    });
    edges.set(file, targets.filter((t) => !t.endsWith(".json.ts") && !t.endsWith(".css.ts")));
  }
  return edges;
}

/** One import circle as a path a → b → … → a, or null. */
function findCircle(edges: Map<string, string[]>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string): string[] | null => {
    state.set(file, "open");
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      if (!edges.has(next)) continue;
      if (state.get(next) === "open") return [...path.slice(path.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(file, "done");
    return null;
  };
  for (const file of edges.keys()) {
    if (!state.has(file)) {
      const found = visit(file);
      if (found) return found;
    }
  }
  return null;
}

describe("the front end's import graph", () => {
  const edges = graph();

  it("reads every file and resolves every relative import to a file", () => {
    expect(edges.size).toBeGreaterThan(50);
    const dangling = [...edges].flatMap(([file, targets]) => targets.filter((t) => !edges.has(t)).map((t) => `${file} → ${t}`));
    expect(dangling).toEqual([]);
  });

  it("has no import circle, type-only imports included", () => {
    expect(findCircle(edges)).toBeNull();
  });

  it("finds a circle where there is one", () => {
    const made = new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts"]]]);
    expect(findCircle(made)).toEqual(["a.ts", "b.ts", "c.ts", "a.ts"]);
  });

  it("imports no entry point from inside the package", () => {
    // js/build.mjs's entries: the split widget and page, the loaders, and the one-module
    // widget.js (an entry made of an entry: the only importer allowed).
    const entries = ["js/widget.ts", "js/standalone.ts", "js/loader/notebook.ts", "js/loader/page.ts", "js/widget_all.ts"];
    const importers = [...edges]
      .filter(([file, targets]) => !entries.includes(file) && targets.some((t) => entries.includes(t)))
      .map(([file]) => file);
    expect(importers).toEqual([]);
  });
});
