import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Effect } from "effect"

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))

/**
 * Integrations through the embedded host (issue 15, item 4): the list derived from the bundled model
 * catalog, and a key connected in process stored in the data directory's `auth.json` (mode 0600) and
 * offered by the provider catalog at once.
 */
describe("Embedded OpenCode integrations", () => {
  it.scopedLive("lists integrations and connects a provider by key", () =>
    Effect.gen(function* () {
      const dataHome = temp("data")
      const host = yield* OpenCode.embedded({
        databaseFile: path.join(temp("embedded"), "opencode.db"),
        directory: temp("instance"),
        env: {
          XDG_DATA_HOME: dataHome,
          XDG_CONFIG_HOME: temp("config"),
          XDG_CACHE_HOME: temp("cache"),
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          OPENCODE_DISABLE_PROJECT_CONFIG: "1"
        }
      })
      const list = yield* host.integrations.list({})
      const openai = list.data.find((item) => item.id === "openai")
      expect(openai).toEqual({
        id: "openai",
        name: "OpenAI",
        methods: [
          { type: "key", label: "API key" },
          { type: "env", names: ["OPENAI_API_KEY"] }
        ],
        connections: []
      })
      const before = yield* host.providers.list({})
      expect(before.data.map((provider) => provider.id)).not.toContain("openai")

      yield* host.integrations.connectKey({ integrationID: "openai", key: "sk-embedded-secret", label: "mine" })

      const after = yield* host.providers.list({})
      expect(after.data.map((provider) => provider.id)).toContain("openai")
      const connected = yield* host.integrations.get({ integrationID: "openai" })
      expect(connected.data.connections).toEqual([{ type: "credential", id: "openai", label: "mine" }])
      expect(JSON.stringify([after, connected])).not.toContain("sk-embedded-secret")
      const authFile = path.join(dataHome, "opencode", "auth.json")
      expect(fs.statSync(authFile).mode & 0o777).toBe(0o600)
      expect(JSON.parse(fs.readFileSync(authFile, "utf8"))).toEqual({
        openai: { type: "api", key: "sk-embedded-secret", label: "mine" }
      })

      const unknown = yield* host.integrations.get({ integrationID: "no-such-provider" }).pipe(Effect.flip)
      expect(unknown._tag).toBe("InvalidRequestError")
    })
  )
})
