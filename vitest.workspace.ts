import { defineWorkspace } from "vitest/config"

/** The one place that lists the test projects: every package runs its own `test/` folder. */
export default defineWorkspace([
  "packages/schema",
  "packages/protocol",
  "packages/core",
  "packages/server",
  "packages/client",
  "packages/sdk-next",
  "scripts"
])
