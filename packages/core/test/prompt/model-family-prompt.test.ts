import { describe, expect, it } from "@effect/vitest"
import { AgentPrompt, EnvFlag, ModelFamilyPrompt, ModelIdentity, SessionSelection } from "@opencode-ai/core"
import { ChatRequest, LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "../runner/world.js"

/**
 * The agent prompt chosen by model family (seed 003 "Provider prompt routing") and the model identity
 * line (seed 003 "Environment and project reference templates"), as a table and through the runner.
 */

const { reply, text, finish } = LLMScript

/** API ID, provider ID, expected family: every branch, in the seed's order, with its edges. */
const table: ReadonlyArray<readonly [string, string, ModelFamilyPrompt.Family]> = [
  ["muse-spark-1", "meta", "muse"],
  ["muse-glimmer-1", "meta", "muse"],
  ["gpt-4o", "openai", "persistent"],
  ["gpt-4.1-mini", "openai", "persistent"],
  ["o1-preview", "openai", "persistent"],
  ["o3-mini", "openai", "persistent"],
  // gpt-4 / o1 / o3 are tested before the other gpt branches.
  ["gpt-o3-codex", "openai", "persistent"],
  ["gpt-5", "openai", "gpt"],
  ["gpt-5-codex", "openai", "codex"],
  ["gpt-6", "openai", "gpt-6"],
  // gpt-6 before codex.
  ["gpt-6-codex", "openai", "gpt-6"],
  ["gemini-2.5-pro", "google", "gemini"],
  // Without the dash it is not the Gemini branch.
  ["gemini", "google", "default"],
  ["claude-sonnet-4-5", "anthropic", "anthropic"],
  // Case-sensitive, as upstream's.
  ["Claude-Sonnet", "anthropic", "default"],
  ["arcee-ai/Trinity-Large", "arcee", "trinity"],
  ["Kimi-K2-Instruct", "groq", "kimi"],
  ["k2-turbo", "moonshotai", "kimi"],
  ["k2-turbo", "moonshotai-cn", "kimi"],
  ["k2", "kimi-for-coding", "kimi"],
  ["qwen3-coder", "alibaba", "default"]
]

describe("ModelFamilyPrompt", () => {
  it.each(table)("seed 003 Provider prompt routing: %s on %s → %s", (apiID, providerID, family) => {
    expect(ModelFamilyPrompt.family({ apiID, providerID })).toBe(family)
  })

  it("seed 003 Provider prompt routing: each family has its own prompt; Muse prompts carry the model's name", () => {
    const prompts = table.map(([apiID, providerID]) => ModelFamilyPrompt.forModel({ apiID, providerID }))
    expect(new Set(prompts).size).toBe(new Set(table.map(([, , family]) => family)).size + 1)
    expect(ModelFamilyPrompt.forModel({ apiID: "muse-glimmer-1", providerID: "meta" })).toContain("Muse Glimmer")
    expect(ModelFamilyPrompt.forModel({ apiID: "muse-spark-1", providerID: "meta" })).toContain("Muse Spark")
    for (const prompt of prompts) expect(prompt).not.toContain("{{MODEL_NAME}}")
    // GPT-4 and o-series are pushed to keep going; Claude is told to be concise and parallel.
    expect(ModelFamilyPrompt.persistent).toContain("Keep going until the user's request is completely resolved")
    expect(ModelFamilyPrompt.anthropic).toContain("Be concise")
    expect(ModelFamilyPrompt.anthropic).toContain("make them all in one message so they run in parallel")
  })

  it("seed 003 Provider prompt routing: the explore agent keeps its own prompt; build, plan, general and config agents use the family's", () => {
    const model = { apiID: "claude-sonnet-4-5", providerID: "anthropic" }
    expect(AgentPrompt.forAgent("explore", model)).toBe(AgentPrompt.explore)
    for (const agent of ["build", "plan", "general", "reviewer", "toString"]) {
      expect(AgentPrompt.forAgent(agent, model)).toBe(ModelFamilyPrompt.anthropic)
    }
  })

  it("experimental plan mode: OPENCODE_EXPERIMENTAL_PLAN_MODE or the OPENCODE_EXPERIMENTAL umbrella, 1 or true", () => {
    expect(EnvFlag.experimentalPlanMode({})).toBe(false)
    expect(EnvFlag.experimentalPlanMode({ OPENCODE_EXPERIMENTAL_PLAN_MODE: "1" })).toBe(true)
    expect(EnvFlag.experimentalPlanMode({ OPENCODE_EXPERIMENTAL_PLAN_MODE: "TRUE" })).toBe(true)
    expect(EnvFlag.experimentalPlanMode({ OPENCODE_EXPERIMENTAL: "true" })).toBe(true)
    expect(EnvFlag.experimentalPlanMode({ OPENCODE_EXPERIMENTAL_PLAN_MODE: "0", OPENCODE_EXPERIMENTAL: "no" })).toBe(
      false
    )
  })
})

/** One scripted model per routing branch (the key is the model's config key, `id` its API ID). */
const models: ReadonlyArray<readonly [string, string, string]> = [
  ["g4", "gpt-4o", ModelFamilyPrompt.persistent],
  ["g5", "gpt-5", ModelFamilyPrompt.gpt],
  ["cx", "gpt-5-codex", ModelFamilyPrompt.codex],
  ["g6", "gpt-6", ModelFamilyPrompt.gpt6],
  ["gm", "gemini-2.5-pro", ModelFamilyPrompt.gemini],
  ["cl", "claude-sonnet-4-5", ModelFamilyPrompt.anthropic],
  ["tr", "trinity-mini", ModelFamilyPrompt.trinity],
  ["km", "kimi-k2", ModelFamilyPrompt.kimi],
  ["mu", "muse-glimmer-1", ModelFamilyPrompt.muse.replaceAll("{{MODEL_NAME}}", "Muse Glimmer")],
  ["m", "m", ModelFamilyPrompt.fallback]
]

const modelConfig = Object.fromEntries(
  models
    .filter(([key]) => key !== "m")
    .map(([key, id]) => [key, { id, name: id, tool_call: true, limit: { context: 100_000, output: 1000 } }])
)

describe("the family prompt and the identity line through the runner", () => {
  it.scopedLive(
    "seed 003 Provider prompt routing + Environment and project reference templates: after each model switch the Step's system text opens with that family's prompt and the new identity line; the Instruction Baseline after it is unchanged",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ models: modelConfig })
        for (const [key] of models) {
          yield* w.run(
            Effect.flatMap(SessionSelection.Service, (selection) =>
              selection.switchModel(w.session.id, { providerID: "scripted", id: key })
            )
          )
          yield* w.server.enqueue(reply(text(`answer from ${key}`), finish("stop")))
          yield* w.prompt(`question for ${key}`)
          yield* w.wait
        }
        const requests = yield* w.server.requests
        expect(requests).toHaveLength(models.length)
        const baselines = models.map(([, apiID, prompt], index) => {
          const request = requests[index]!
          expect(request.body.model).toBe(apiID)
          const head = `${prompt}\n\n${ModelIdentity.line({ providerID: "scripted", apiID })}\n`
          const system = ChatRequest.system(request)
          expect(system.startsWith(head)).toBe(true)
          // The identity line names only the current model.
          expect(system.split("You are running on the model")).toHaveLength(2)
          return system.slice(head.length)
        })
        expect(baselines[0]).toContain("<env>")
        expect(new Set(baselines).size).toBe(1)
        expect(ModelIdentity.line({ providerID: "scripted", apiID: "gpt-4o" })).toBe(
          "You are running on the model gpt-4o; its exact model ID is scripted/gpt-4o."
        )
      })
  )

  it.scopedLive("seed 003 Provider prompt routing: an agent's own prompt (config) replaces the family prompt", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { prompt: "You are the project's custom agent." } } })
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* w.prompt("hi")
      yield* w.wait
      const [request] = yield* w.server.requests
      const system = ChatRequest.system(request!)
      expect(
        system.startsWith(
          `You are the project's custom agent.\n\n${ModelIdentity.line({ providerID: "scripted", apiID: "m" })}\n`
        )
      ).toBe(true)
      expect(system).not.toContain(ModelFamilyPrompt.fallback)
    })
  )
})
