import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { OpenApiDocument } from "@opencode-ai/protocol"
import { describe, expect, it } from "vitest"

const documentFile = path.resolve(__dirname, "../openapi.json")

const operations = () =>
  Object.entries(OpenApiDocument.make().paths).flatMap(([route, methods]) =>
    Object.entries(methods as Record<string, any>).map(([method, op]) => ({ route, method, op }))
  )

describe("openapi.json", () => {
  it("is up to date with the API (regenerate with `pnpm generate`)", () => {
    const checkedIn = fs.readFileSync(documentFile, "utf8")
    expect(checkedIn).toBe(OpenApiDocument.render())
  })

  it("declares no framework decode error: every bad request is InvalidRequestError", () => {
    expect(OpenApiDocument.render()).not.toContain("HttpApiDecodeError")
  })

  it("documents every operation (summary and description) and every parameter", () => {
    const undocumented = operations().flatMap(({ route, method, op }) => [
      ...(op.summary ? [] : [`${method} ${route}: summary`]),
      ...(op.description ? [] : [`${method} ${route}: description`]),
      ...(op.parameters ?? []).flatMap((p: any) => (p.description ? [] : [`${method} ${route}: ${p.in} ${p.name}`]))
    ])
    expect(undocumented).toEqual([])
  })

  it("declares Basic auth and the default server; every operation accepts Basic or no credentials", () => {
    const doc = OpenApiDocument.make() as any
    expect(doc.components.securitySchemes.basicAuth).toMatchObject({ type: "http", scheme: "basic" })
    expect(doc.servers).toEqual([expect.objectContaining({ url: "http://127.0.0.1:4096" })])
    for (const { op } of operations()) expect(op.security).toEqual([{}, { basicAuth: [] }])
  })

  it("passes `redocly lint` with the recommended rules: no errors", () => {
    const bin = path.resolve(__dirname, "../node_modules/.bin/redocly")
    // `lint` exits non-zero on errors; the JSON report is read either way.
    const run = () => {
      try {
        return execFileSync(bin, ["lint", documentFile, "--format=json"], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "ignore"],
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }
        })
      } catch (error) {
        return String((error as { stdout?: unknown }).stdout ?? "")
      }
    }
    const report = JSON.parse(run())
    const errors = report.problems.filter((p: { severity: string }) => p.severity === "error")
    expect(errors).toEqual([])
    expect(report.totals.errors).toBe(0)
  }, 60_000)
})
