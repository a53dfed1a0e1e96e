import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { call, startServer } from "./harness.js"

describe("instruction entries over HTTP", () => {
  it.scoped("list, put (create and replace) and delete, idempotently", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const session = (yield* call(`${url}/api/session`, "POST", {})).body.data
      const base = `${url}/api/session/${session.id}/instructions/entries`
      expect(yield* call(base, "GET")).toEqual({ status: 200, body: { data: [] } })
      expect(yield* call(`${base}/style`, "PUT", { value: "Prefer small commits." })).toEqual({
        status: 200,
        body: { data: { key: "style", value: "Prefer small commits." } }
      })
      yield* call(`${base}/ticket`, "PUT", { value: { id: 42, labels: ["bug"] } })
      yield* call(`${base}/style`, "PUT", { value: "Prefer tiny commits." })
      expect((yield* call(base, "GET")).body.data).toEqual([
        { key: "style", value: "Prefer tiny commits." },
        { key: "ticket", value: { id: 42, labels: ["bug"] } }
      ])
      expect((yield* call(`${base}/style`, "DELETE")).status).toBe(204)
      expect((yield* call(`${base}/style`, "DELETE")).status).toBe(204)
      expect((yield* call(base, "GET")).body.data.map((e: any) => e.key)).toEqual(["ticket"])
    })
  )

  it.scoped("unknown session → 404; bad key or value → 400", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const session = (yield* call(`${url}/api/session`, "POST", {})).body.data
      const base = `${url}/api/session/${session.id}/instructions/entries`
      const missing = yield* call(`${url}/api/session/ses_missing/instructions/entries`, "GET")
      expect(missing.status).toBe(404)
      expect(missing.body._tag).toBe("SessionNotFoundError")
      expect((yield* call(`${url}/api/session/ses_missing/instructions/entries/a`, "PUT", { value: 1 })).status).toBe(
        404
      )
      for (const key of ["Upper", "-dash", "has%2Fslash", "sp%20ace"]) {
        const bad = yield* call(`${base}/${key}`, "PUT", { value: 1 })
        expect({ key, status: bad.status, tag: bad.body._tag }).toEqual({
          key,
          status: 400,
          tag: "InvalidRequestError"
        })
      }
      for (const body of [{}, { value: 1, extra: true }, { value: undefined }]) {
        const bad = yield* call(`${base}/ok`, "PUT", body)
        expect(bad.status).toBe(400)
        expect(bad.body._tag).toBe("InvalidRequestError")
      }
      expect((yield* call(base, "GET")).body.data).toEqual([])
    })
  )
})
