import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/build.global.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
