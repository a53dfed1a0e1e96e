import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Config } from "@opencode-ai/core"
import { Effect, Either } from "effect"
import { ConfigSource } from "../../src/config/config-source.js"
import { tempDir } from "./world.js"

const parse = (text: string, env: Record<string, string | undefined> = {}) =>
  ConfigSource.parse({ file: "/nowhere/opencode.json", directory: "/nowhere", text, env }).pipe(
    Effect.provide(NodeContext.layer),
    Effect.either
  )

describe("the mcp config key (upstream shape)", () => {
  it.effect("local and remote servers, with {env:…} substitution in headers", () =>
    Effect.gen(function* () {
      const parsed = yield* parse(
        JSON.stringify({
          mcp: {
            docs: {
              type: "local",
              command: ["npx", "-y", "docs-mcp"],
              environment: { DOCS_HOME: "/srv/docs" },
              enabled: true,
              timeout: 10000
            },
            tracker: {
              type: "remote",
              url: "https://mcp.example.test/mcp",
              headers: { Authorization: "Bearer {env:TRACKER_TOKEN}" }
            }
          }
        }),
        { TRACKER_TOKEN: "t0k" }
      )
      if (Either.isLeft(parsed)) throw parsed.left
      expect(parsed.right.info.mcp).toEqual({
        docs: {
          type: "local",
          command: ["npx", "-y", "docs-mcp"],
          environment: { DOCS_HOME: "/srv/docs" },
          enabled: true,
          timeout: 10000
        },
        tracker: { type: "remote", url: "https://mcp.example.test/mcp", headers: { Authorization: "Bearer t0k" } }
      })
    })
  )

  it.effect("a bare {enabled} entry toggles a server another document defines; documents merge key by key", () =>
    Effect.gen(function* () {
      const root = tempDir("opencode-mcp-config-")
      const configDir = path.join(root, "config")
      const project = path.join(root, "project")
      fs.mkdirSync(configDir)
      fs.mkdirSync(project)
      fs.writeFileSync(
        path.join(configDir, "opencode.json"),
        JSON.stringify({
          mcp: {
            docs: { type: "local", command: ["docs-mcp"] },
            other: { type: "remote", url: "http://127.0.0.1:1/mcp" }
          }
        })
      )
      fs.writeFileSync(path.join(project, "opencode.json"), JSON.stringify({ mcp: { docs: { enabled: false } } }))
      const config = yield* Config.load({ directory: project, worktreeRoot: project, env: {}, configDir }).pipe(
        Effect.provide(NodeContext.layer)
      )
      expect(config.info.mcp).toEqual({
        docs: { type: "local", command: ["docs-mcp"], enabled: false },
        other: { type: "remote", url: "http://127.0.0.1:1/mcp" }
      })
    })
  )

  it.effect("an incomplete typed entry fails with its key path", () =>
    Effect.gen(function* () {
      const missing = yield* parse(JSON.stringify({ mcp: { docs: { type: "local", enabled: true } } }))
      expect(Either.isLeft(missing) && missing.left.message).toContain("mcp.docs")
      const wrong = yield* parse(JSON.stringify({ mcp: { docs: { type: "remote", url: 42 } } }))
      expect(Either.isLeft(wrong)).toBe(true)
      const timeout = yield* parse(JSON.stringify({ mcp: { docs: { type: "local", command: ["x"], timeout: -1 } } }))
      expect(Either.isLeft(timeout)).toBe(true)
    })
  )
})
