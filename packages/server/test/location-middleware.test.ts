import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startServer } from "./harness.js"

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    return { status: response.status, body: await response.json() }
  })

describe("the Location middleware over the real server", () => {
  it.scoped("resolves the location query once for the handler: a subdirectory is the Location of the answer", () =>
    Effect.gen(function* () {
      const { url, directory } = yield* startServer()
      const sub = path.join(directory, "nested")
      fs.mkdirSync(sub)
      const query = `location[directory]=${encodeURIComponent(sub)}`
      for (const route of ["/api/location", "/api/skill", "/api/command", "/api/pty"]) {
        const answer = yield* get(`${url}${route}?${query}`)
        expect(answer.status, route).toBe(200)
        const location = route === "/api/location" ? answer.body : answer.body.location
        expect(location?.directory, route).toBe(fs.realpathSync(sub))
      }
    })
  )

  it.scoped("an undecodable location query is the decoder's 400 InvalidRequestError, naming the field", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const repeated = yield* get(`${url}/api/skill?location[directory]=/a&location[directory]=/b`)
      expect(repeated.status).toBe(400)
      expect(repeated.body).toMatchObject({
        _tag: "InvalidRequestError",
        kind: "validation",
        field: "location[directory]"
      })
      expect(repeated.body.message).toMatch(/^Invalid request: location\[directory\]: /)
    })
  )

  it.scoped("Authorization runs first: without credentials a bad location is 401, with them 400", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "pw" })
      const bad = `${url}/api/skill?location[directory]=/definitely/not/here`
      expect((yield* get(bad)).status).toBe(401)
      const authorization = `Basic ${Buffer.from("opencode:pw").toString("base64")}`
      const refused = yield* get(bad, { authorization })
      expect(refused.status).toBe(400)
      expect(refused.body._tag).toBe("InvalidRequestError")
    })
  )
})
