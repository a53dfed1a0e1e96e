import * as os from "node:os"
import * as path from "node:path"
import { defineProject } from "vitest/config"

// Tests never read the user's configuration: the default global config dir is a directory that does
// not exist, and the config variables of the developer's shell are cleared. A test that wants a
// config passes its own directory or environment.
const env = {
  XDG_CONFIG_HOME: path.join(os.tmpdir(), `opencode-test-no-config-${process.pid}`),
  // Nor its data: managed tool output and default databases land in a scratch directory.
  XDG_DATA_HOME: path.join(os.tmpdir(), `opencode-test-data-${process.pid}`),
  // Nor the network: no test fetches the model database from models.dev (a test that refreshes serves
  // it from a loopback server), and the model cache lands in a scratch directory.
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  XDG_CACHE_HOME: path.join(os.tmpdir(), `opencode-test-cache-${process.pid}`),
  OPENCODE_CONFIG: "",
  OPENCODE_CONFIG_CONTENT: ""
}

export default defineProject({
  test: {
    env,
    name: "server",
    include: ["test/**/*.test.ts"],
    // `OPENCODE_TEST_DATABASE=postgres` runs the suite over a PostgreSQL server shared by the run.
    globalSetup: ["test/build.global.ts", "test/test-database.global.ts"],
    setupFiles: ["test/test-database.setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
