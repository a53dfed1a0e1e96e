import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { AgentCatalog } from "../../src/config/agent-catalog.js"
import { Config } from "../../src/config/config.js"
import type { ConfigInfo } from "../../src/config/config-info.js"

const load = (info: ConfigInfo.Info, options: { dataDir?: string; worktreeRoot?: string } = {}) =>
  Effect.either(Effect.provide(Config.Service, Config.layerTest(info, options)))

const failure = <A, E>(result: Either.Either<A, E>): E => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

/** A minimal last-match-wins evaluation (`*` matches anything), enough to read the rulesets. */
const evaluate = (rules: AgentCatalog.Ruleset, action: string, resource: string) => {
  const glob = (pattern: string) =>
    new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`)
  return [...rules].reverse().find((rule) => glob(rule.action).test(action) && glob(rule.resource).test(resource))
    ?.effect
}

const provider = {
  local: {
    npm: "@ai-sdk/openai-compatible",
    options: { baseURL: "http://127.0.0.1:1/v1" },
    models: { qwen: {}, tiny: {} }
  }
}

describe("AgentCatalog", () => {
  it.effect(
    "the built-ins: build and plan primary, general and explore subagents, three hidden ones; no step limit",
    () =>
      Effect.gen(function* () {
        const config = Either.getOrThrow(yield* load({}))
        assert.deepStrictEqual(
          config.agents.map(({ name, mode, hidden, native }) => ({ name, mode, hidden, native })),
          [
            { name: "build", mode: "primary", hidden: false, native: true },
            { name: "plan", mode: "primary", hidden: false, native: true },
            { name: "general", mode: "subagent", hidden: false, native: true },
            { name: "explore", mode: "subagent", hidden: false, native: true },
            { name: "compaction", mode: "primary", hidden: true, native: true },
            { name: "title", mode: "primary", hidden: true, native: true },
            { name: "summary", mode: "primary", hidden: true, native: true }
          ]
        )
        assert.strictEqual(config.defaultAgent, "build")
        for (const agent of config.agents) assert.isUndefined(agent.steps, agent.name)
        const rules = (name: string) => Option.getOrThrow(config.agent(name)).permission
        // build: every tool
        assert.strictEqual(evaluate(rules("build"), "edit", "src/a.ts"), "allow")
        assert.strictEqual(evaluate(rules("build"), "bash", "rm -rf x"), "allow")
        assert.strictEqual(evaluate(rules("build"), "question", "*"), "allow")
        assert.strictEqual(evaluate(rules("build"), "plan_exit", "*"), "deny")
        assert.strictEqual(evaluate(rules("build"), "read", ".env"), "ask")
        assert.strictEqual(evaluate(rules("build"), "read", ".env.example"), "allow")
        assert.strictEqual(evaluate(rules("build"), "external_directory", "/etc"), "ask")
        // plan: edits denied, except plan files
        assert.strictEqual(evaluate(rules("plan"), "edit", "src/a.ts"), "deny")
        assert.strictEqual(evaluate(rules("plan"), "edit", ".opencode/plans/p.md"), "allow")
        assert.strictEqual(evaluate(rules("plan"), "plan_exit", "*"), "allow")
        assert.strictEqual(evaluate(rules("plan"), "read", "src/a.ts"), "allow")
        // general: no todo list; explore: read and search only
        assert.strictEqual(evaluate(rules("general"), "todowrite", "*"), "deny")
        assert.strictEqual(evaluate(rules("general"), "edit", "a"), "allow")
        assert.strictEqual(evaluate(rules("explore"), "edit", "a"), "deny")
        assert.strictEqual(evaluate(rules("explore"), "bash", "ls"), "deny")
        assert.strictEqual(evaluate(rules("explore"), "grep", "x"), "allow")
        assert.strictEqual(evaluate(rules("explore"), "read", "a.ts"), "allow")
        // hidden agents: no tools
        assert.strictEqual(evaluate(rules("title"), "read", "a.ts"), "deny")
      })
  )

  it.effect("with a data directory, managed tool output and plan files are reachable", () =>
    Effect.gen(function* () {
      const config = Either.getOrThrow(yield* load({}, { dataDir: "/data/opencode", worktreeRoot: "/data/w" }))
      const plan = Option.getOrThrow(config.agent("plan")).permission
      assert.strictEqual(evaluate(plan, "external_directory", "/data/opencode/tool-output/tool_1"), "allow")
      assert.strictEqual(evaluate(plan, "external_directory", "/data/opencode/plans/x.md"), "allow")
      assert.strictEqual(evaluate(plan, "edit", "../opencode/plans/x.md"), "allow")
      assert.strictEqual(evaluate(plan, "external_directory", "/elsewhere"), "ask")
    })
  )

  it.effect("config fields override a built-in; disable removes one; new agents are mode all", () =>
    Effect.gen(function* () {
      const config = Either.getOrThrow(
        yield* load({
          provider,
          agent: {
            build: { steps: 25, model: "local/tiny", temperature: 0.2, top_p: 0.9, prompt: "Be terse." },
            plan: { maxSteps: 3 },
            explore: { disable: true },
            title: { steps: 1, maxSteps: 9 },
            review: { description: "Reviews diffs", permission: { edit: "deny" } }
          }
        })
      )
      assert.deepStrictEqual(
        config.agents.map((agent) => agent.name),
        ["build", "plan", "general", "compaction", "title", "summary", "review"]
      )
      assert.isTrue(Option.isNone(config.agent("explore")))
      const build = Option.getOrThrow(config.agent("build"))
      assert.strictEqual(build.steps, 25)
      assert.deepStrictEqual(build.model, { providerID: "local", id: "tiny" })
      assert.strictEqual(build.temperature, 0.2)
      assert.strictEqual(build.topP, 0.9)
      assert.strictEqual(build.prompt, "Be terse.")
      assert.strictEqual(build.description, "The default agent: it works with every tool its permission rules allow.")
      assert.strictEqual(Option.getOrThrow(config.agent("plan")).steps, 3)
      assert.strictEqual(Option.getOrThrow(config.agent("title")).steps, 1)
      const review = Option.getOrThrow(config.agent("review"))
      assert.deepStrictEqual(
        { mode: review.mode, native: review.native, description: review.description, hidden: review.hidden },
        { mode: "all", native: false, description: "Reviews diffs", hidden: false }
      )
      assert.deepStrictEqual(review.permission, [
        ...AgentCatalog.defaults(),
        { action: "edit", resource: "*", effect: "deny" }
      ])
    })
  )

  it.effect(
    "permissions: built-in rules, then top-level tools and permission, then the agent's; the last match wins",
    () =>
      Effect.gen(function* () {
        const config = Either.getOrThrow(
          yield* load({
            tools: { webfetch: false },
            permission: { bash: { "*": "ask", "git status": "allow" } },
            agent: {
              build: { tools: { write: false }, permission: { bash: { "git push*": "deny" } } },
              plan: { permission: { edit: "allow" } },
              general: { permission: "ask" }
            }
          })
        )
        const rules = (name: string) => Option.getOrThrow(config.agent(name)).permission
        assert.deepStrictEqual(rules("build").slice(-5), [
          { action: "webfetch", resource: "*", effect: "deny" },
          { action: "bash", resource: "*", effect: "ask" },
          { action: "bash", resource: "git status", effect: "allow" },
          { action: "edit", resource: "*", effect: "deny" },
          { action: "bash", resource: "git push*", effect: "deny" }
        ])
        assert.strictEqual(evaluate(rules("build"), "bash", "git status"), "allow")
        assert.strictEqual(evaluate(rules("build"), "bash", "git push origin"), "deny")
        assert.strictEqual(evaluate(rules("build"), "bash", "ls"), "ask")
        assert.strictEqual(evaluate(rules("build"), "edit", "a.ts"), "deny")
        assert.strictEqual(evaluate(rules("plan"), "edit", "a.ts"), "allow")
        assert.strictEqual(evaluate(rules("plan"), "webfetch", "u"), "deny")
        assert.strictEqual(evaluate(rules("general"), "read", "a.ts"), "ask")
      })
  )

  it.effect("the default agent: default_agent, else build, else the first selectable primary agent", () =>
    Effect.gen(function* () {
      assert.strictEqual(Either.getOrThrow(yield* load({ default_agent: "plan" })).defaultAgent, "plan")
      assert.strictEqual(Either.getOrThrow(yield* load({ agent: { build: { disable: true } } })).defaultAgent, "plan")
      const subagent = failure(yield* load({ default_agent: "explore" }))
      assert.strictEqual(subagent.key, "default_agent")
      assert.include(subagent.message, "subagent-only")
      const hidden = failure(yield* load({ default_agent: "title" }))
      assert.include(hidden.message, "hidden")
      const disabled = failure(yield* load({ default_agent: "plan", agent: { plan: { disable: true } } }))
      assert.include(disabled.message, "is not an enabled agent")
      const none = failure(yield* load({ agent: { build: { disable: true }, plan: { disable: true } } }))
      assert.strictEqual(none.key, "agent")
      // a config-defined primary agent can carry on alone
      assert.strictEqual(
        Either.getOrThrow(
          yield* load({ agent: { build: { disable: true }, plan: { disable: true }, mine: { mode: "primary" } } })
        ).defaultAgent,
        "mine"
      )
    })
  )

  it.effect("an agent's model must name a configured model", () =>
    Effect.gen(function* () {
      const error = failure(yield* load({ provider, agent: { plan: { model: "local/huge" } } }))
      assert.strictEqual(error.key, "agent.plan.model")
      assert.include(error.message, `names model "huge"`)
      // a disabled agent's model is not checked
      assert.isTrue(Either.isRight(yield* load({ provider, agent: { plan: { model: "x/y", disable: true } } })))
    })
  )

  it("fromConfig: a single action covers every tool; per-tool objects keep their order", () => {
    assert.deepStrictEqual(AgentCatalog.fromConfig({ permission: "deny" }), [
      { action: "*", resource: "*", effect: "deny" }
    ])
    assert.deepStrictEqual(
      AgentCatalog.fromConfig({
        tools: { patch: false, bash: true },
        permission: { webfetch: "ask", bash: { "*": "ask", "ls*": "allow" } }
      }),
      [
        { action: "edit", resource: "*", effect: "deny" },
        { action: "bash", resource: "*", effect: "allow" },
        { action: "webfetch", resource: "*", effect: "ask" },
        { action: "bash", resource: "*", effect: "ask" },
        { action: "bash", resource: "ls*", effect: "allow" }
      ]
    )
  })
})
