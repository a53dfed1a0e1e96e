import * as fs from "node:fs"
import * as path from "node:path"
import { OpenApiDocument } from "@opencode-ai/protocol"
import { describe, expect, it } from "vitest"

describe("openapi.json", () => {
  it("is up to date with the API (regenerate with `pnpm generate`)", () => {
    const checkedIn = fs.readFileSync(path.resolve(__dirname, "../openapi.json"), "utf8")
    expect(checkedIn).toBe(OpenApiDocument.render())
  })

  it("declares no framework decode error: every bad request is InvalidRequestError", () => {
    expect(OpenApiDocument.render()).not.toContain("HttpApiDecodeError")
  })
})
