import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, LogLevel } from "effect"
import { Serve } from "../src/serve.js"
import { configHome, startServer, tempDir } from "./harness.js"

/** The DESIGN §5 example (a local OpenAI-compatible server), plus agent overrides and extra headers. */
const document = {
  provider: {
    local: {
      npm: "@ai-sdk/openai-compatible",
      name: "Local llama",
      options: {
        baseURL: "http://127.0.0.1:8080/v1/",
        apiKey: "{env:LOCAL_KEY}",
        headers: { "X-Title": "opencode", Authorization: "Bearer header-secret", "x-api-key": "other-secret" }
      },
      models: {
        qwen: { limit: { context: 32768, output: 4096 } },
        coder: {
          id: "qwen2.5-coder:7b",
          name: "Qwen Coder",
          tool_call: false,
          modalities: { input: ["text", "image"], output: ["text"] }
        }
      }
    }
  },
  model: "local/qwen",
  agent: {
    plan: { disable: true },
    reviewer: {
      description: "Reviews changes",
      mode: "subagent",
      prompt: "Review the diff.",
      model: "local/coder",
      steps: 3,
      color: "#ff8800",
      permission: { edit: "deny" }
    },
    explore: { hidden: true }
  }
}

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    const text = await response.text()
    return { status: response.status, text, body: JSON.parse(text) }
  })

const api = {
  type: "aisdk",
  package: "@ai-sdk/openai-compatible",
  url: "http://127.0.0.1:8080/v1"
}

describe("catalog endpoints over a configured server", () => {
  it.scoped("GET /api/provider and /api/provider/{id} list the configured provider without credentials", () =>
    Effect.gen(function* () {
      const { url, directory } = yield* startServer({
        XDG_CONFIG_HOME: configHome(document),
        LOCAL_KEY: "sk-local-secret"
      })
      const location = {
        directory: fs.realpathSync(directory),
        project: { id: expect.any(String), directory: fs.realpathSync(directory) }
      }
      const local = { id: "local", name: "Local llama", api, request: { headers: { "X-Title": "opencode" }, body: {} } }

      const list = yield* get(`${url}/api/provider`)
      expect(list.status).toBe(200)
      expect(list.body).toEqual({ location, data: [local] })
      for (const secret of ["sk-local-secret", "header-secret", "other-secret"]) expect(list.text).not.toContain(secret)

      const one = yield* get(`${url}/api/provider/local`)
      expect(one.status).toBe(200)
      expect(one.body).toEqual({ location, data: local })
      expect(one.text).not.toContain("sk-local-secret")

      const missing = yield* get(`${url}/api/provider/nope`)
      expect(missing.status).toBe(404)
      expect(missing.body).toEqual({
        _tag: "ProviderNotFoundError",
        providerID: "nope",
        message: "Provider not found: nope"
      })
    })
  )

  it.scoped("GET /api/model lists every configured model with its limits, in config order", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ XDG_CONFIG_HOME: configHome(document), LOCAL_KEY: "sk-local-secret" })
      const { status, body } = yield* get(`${url}/api/model`)
      expect(status).toBe(200)
      const common = {
        providerID: "local",
        request: { headers: {}, body: {} },
        variants: [],
        time: { released: 0 },
        cost: [],
        status: "active",
        enabled: true
      }
      expect(body.data).toEqual([
        {
          ...common,
          id: "qwen",
          name: "qwen",
          api: { id: "qwen", ...api },
          capabilities: { tools: true, input: ["text"], output: ["text"] },
          limit: { context: 32768, output: 4096 }
        },
        {
          ...common,
          id: "coder",
          name: "Qwen Coder",
          api: { id: "qwen2.5-coder:7b", ...api },
          // the declared input kinds (`modalities.input`)
          capabilities: { tools: false, input: ["text", "image"], output: ["text"] },
          limit: { context: 0, output: 0 }
        }
      ])
    })
  )

  it.scoped("GET /api/agent lists the built-ins and config agents; disabled ones are absent, hidden ones flagged", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ XDG_CONFIG_HOME: configHome(document), LOCAL_KEY: "k" })
      const { status, body } = yield* get(`${url}/api/agent`)
      expect(status).toBe(200)
      const agents: Array<any> = body.data
      expect(agents.map((agent) => [agent.id, agent.mode, agent.hidden])).toEqual([
        ["build", "primary", false],
        ["general", "subagent", false],
        ["explore", "subagent", true],
        ["compaction", "primary", true],
        ["title", "primary", true],
        ["summary", "primary", true],
        ["reviewer", "subagent", false]
      ])
      const reviewer = agents.find((agent) => agent.id === "reviewer")
      expect(reviewer).toMatchObject({
        model: { providerID: "local", id: "coder" },
        request: { headers: {}, body: {} },
        system: "Review the diff.",
        description: "Reviews changes",
        color: "#ff8800",
        steps: 3
      })
      // The config's own rule comes last, so it wins.
      expect(reviewer.permissions.at(-1)).toEqual({ action: "edit", resource: "*", effect: "deny" })
      const build = agents.find((agent) => agent.id === "build")
      expect(build.description).toBe("The default agent: it works with every tool its permission rules allow.")
      expect(build).not.toHaveProperty("steps")
      expect(build).not.toHaveProperty("model")
      expect(build.permissions[0]).toEqual({ action: "*", resource: "*", effect: "allow" })
      // `system`: the agent's own prompt; build and general take their model family's, so have none.
      expect(build).not.toHaveProperty("system")
      expect(agents.find((agent) => agent.id === "general")).not.toHaveProperty("system")
      const system = (id: string): string => agents.find((agent) => agent.id === id).system
      expect(system("explore")).toContain("read-only OpenCode subagent")
      expect(system("title")).toContain("You name conversations.")
      expect(system("compaction")).toContain("You summarize conversations")
      expect(system("summary")).toContain("pull request description")
    })
  )

  it.scoped("without any opencode.json: no providers or models, and the seven built-in agents", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      expect((yield* get(`${url}/api/provider`)).body.data).toEqual([])
      expect((yield* get(`${url}/api/model`)).body.data).toEqual([])
      expect((yield* get(`${url}/api/agent`)).body.data.map((agent: any) => agent.id)).toEqual([
        "build",
        "plan",
        "general",
        "explore",
        "compaction",
        "title",
        "summary"
      ])
      expect((yield* get(`${url}/api/provider/openai`)).status).toBe(404)
    })
  )

  it.scoped("every catalog endpoint resolves and echoes the requested location", () =>
    Effect.gen(function* () {
      const { url, directory } = yield* startServer({ XDG_CONFIG_HOME: configHome(document), LOCAL_KEY: "k" })
      const nested = path.join(directory, "packages", "app")
      fs.mkdirSync(nested, { recursive: true })
      const query = `location[directory]=${encodeURIComponent(nested)}`
      for (const route of ["/api/agent", "/api/model", "/api/provider", "/api/provider/local"]) {
        const { status, body } = yield* get(`${url}${route}?${query}`)
        expect({ route, status, directory: body.location.directory }).toEqual({
          route,
          status: 200,
          directory: fs.realpathSync(nested)
        })
      }
    })
  )
})

describe("an invalid opencode.json", () => {
  it.scoped("fails the server layer with a ConfigError naming the file, line and reason", () =>
    Effect.gen(function* () {
      const home = configHome(`{\n  "agent": {\n    "build": { "steps": "many" }\n  }\n}\n`)
      const file = path.join(home, "opencode", "opencode.json")
      const dataHome = tempDir("data")
      const error = yield* Layer.build(
        Serve.layer({
          port: 0,
          hostname: "127.0.0.1",
          printLogs: true,
          logLevel: LogLevel.None,
          directory: tempDir("project"),
          env: { XDG_DATA_HOME: dataHome, XDG_CONFIG_HOME: home, OPENCODE_DISABLE_MODELS_FETCH: "1" }
        })
      ).pipe(Effect.flip)
      expect(error).toMatchObject({ _tag: "ConfigError", file, line: 3, key: "agent.build.steps" })
      expect(error.message).toMatch(
        new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3:\\d+: agent\\.build\\.steps: `)
      )
      // Startup stopped before the database was created.
      expect(fs.existsSync(path.join(dataHome, "opencode", "opencode.db"))).toBe(false)
    })
  )
})
