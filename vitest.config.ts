import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "happy-dom",
    include: ["tests/js/**/*.test.ts"],
    setupFiles: ["tests/js/helpers/all_views.ts"],
    globals: true,
    // Large-N drawing tests take ~2.5 s alone; a loaded 2-core CI machine must not turn
    // vitest's 5 s default into a flaky failure. This is a hang guard, not a speed check.
    testTimeout: 30_000,
  },
});
