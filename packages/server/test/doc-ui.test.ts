import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Browser, chromium } from "playwright-core"
import { startServer } from "./harness.js"

/**
 * `/doc/ui`: the API reference page (the platform's Scalar page) renders the OpenAPI document in a
 * real headless Chromium, from the server alone: every request the page makes goes to the server
 * itself (the script is inlined; no CDN, no web fonts). Without `/usr/bin/chromium` the browser case
 * is skipped, except in CI, where it fails (`scripts/system-deps.sh` installs it).
 */
const chromiumPath = "/usr/bin/chromium"
const inCI = process.env.CI === "true"
const hasChromium = fs.existsSync(chromiumPath)

describe("/doc/ui", () => {
  it.scoped("is an HTML page carrying the document and its script inline", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const page = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/doc/ui`)
        return { status: response.status, type: response.headers.get("content-type"), body: await response.text() }
      })
      expect(page.status).toBe(200)
      expect(page.type).toMatch(/^text\/html/)
      expect(page.body).toContain("Create a session")
      expect(page.body).not.toMatch(/<script[^>]+src=/)
    })
  )

  describe.skipIf(!hasChromium && !inCI)("in headless Chromium", () => {
    let browser: Browser | undefined
    beforeAll(async () => {
      if (!hasChromium) throw new Error(`${chromiumPath} is missing: CI must install Chromium (scripts/system-deps.sh)`)
      browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] })
    })
    afterAll(async () => {
      await browser?.close()
    })

    it.scoped(
      "renders the operations, fetching nothing from anywhere but the server",
      () =>
        Effect.gen(function* () {
          const { url } = yield* startServer()
          const requested: Array<string> = []
          yield* Effect.promise(async () => {
            const page = await browser!.newPage()
            page.on("request", (request) => requested.push(request.url()))
            try {
              await page.goto(`${url}/doc/ui`)
              await page.getByText("Check health").first().waitFor({ timeout: 45_000 })
              // The sessions group opens to its operations, by their summaries.
              await page.getByText("sessions", { exact: true }).first().click()
              await page.getByText("Prompt a session").first().waitFor({ timeout: 15_000 })
            } finally {
              await page.close()
            }
          })
          const elsewhere = requested.filter((address) => !address.startsWith(url) && !address.startsWith("data:"))
          expect(elsewhere).toEqual([])
        }),
      90_000
    )
  })
})
