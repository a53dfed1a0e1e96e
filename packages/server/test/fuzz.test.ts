import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { operations, type Request, requests } from "./fuzz/openapi-requests.js"
import { startServer } from "./harness.js"

/*
 * A schema-driven fuzzer over every operation of `openapi.json`: at least 10,000 requests with a fixed
 * seed, against the real listener on 127.0.0.1 over a fresh SQLite file. No answer may be a 5xx, and
 * every 4xx is a tagged JSON error (`_tag` and `message` strings). An event stream that answers 200
 * is closed once its headers arrive.
 */

const seed = 20_251_010
const total = 10_000
const concurrency = 8

const document = JSON.parse(
  fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../protocol/openapi.json"), "utf8")
)

interface Finding {
  readonly request: string
  readonly status: number
  readonly body: string
}

const show = (request: Request) =>
  `${request.method} ${request.target.slice(0, 300)}${request.body === undefined ? "" : ` ${request.body.slice(0, 300)}`}`

/** Answers by status class (`2xx`, `4xx`, …), for the summary line. */
const classes = new Map<string, number>()
const count = (status: number) => {
  const key = status === 0 ? "none" : `${Math.floor(status / 100)}xx`
  classes.set(key, (classes.get(key) ?? 0) + 1)
}

/** Sends `request`; returns a finding when the answer breaks the rules. */
const check = async (url: string, request: Request): Promise<Finding | undefined> => {
  const abort = new AbortController()
  // `wait` legitimately blocks while a run is in progress: cut it off, and only a 5xx counts.
  const timer = setTimeout(() => abort.abort(), 10_000)
  try {
    const response = await fetch(`${url}${request.target}`, {
      method: request.method,
      signal: abort.signal,
      ...(request.body === undefined ? {} : { body: request.body, headers: { "content-type": "application/json" } })
    })
    count(response.status)
    if (request.streams && response.status === 200) {
      abort.abort()
      return undefined
    }
    const text = await response.text()
    const finding = (reason: string) => ({
      request: show(request),
      status: response.status,
      body: `${reason}: ${text.slice(0, 500)}`
    })
    if (response.status >= 500) return finding("5xx")
    if (response.status >= 400) {
      let body: any
      try {
        body = JSON.parse(text)
      } catch {
        return finding("not JSON")
      }
      if (typeof body?._tag !== "string" || typeof body?.message !== "string") return finding("untagged")
      if (text.length > 4000) return finding(`a ${text.length}-character error`)
    }
    return undefined
  } catch (error) {
    if (abort.signal.aborted && request.operationId === "v2.session.wait") return undefined
    return { request: show(request), status: 0, body: String(error) }
  } finally {
    clearTimeout(timer)
  }
}

describe("fuzz", () => {
  it.scopedLive(
    `${total} schema-driven requests over every operation: no 5xx, every 4xx a tagged JSON error`,
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer()
        const created = yield* Effect.promise(() =>
          Promise.all(
            [0, 1].map(() =>
              fetch(`${url}/api/session`, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: "{}"
              })
                .then((r) => r.json())
                .then((r: any) => r.data.id as string)
            )
          )
        )
        const known = [...created, "msg_0000000000000000000000fuzz", "per_0000000000000000000000fuzz", "que_0"]
        const ops = operations(document)
        expect(ops.length).toBeGreaterThan(30)
        const perOperation = Math.ceil(total / ops.length)
        // One fixed sequence per operation, then interleaved, so every operation is hit throughout.
        const perOp = ops.map((op, i) =>
          fc.sample(requests(op, document, known), { seed: seed + i, numRuns: perOperation })
        )
        const all: Array<Request> = []
        for (let n = 0; n < perOperation; n++) for (const list of perOp) if (list[n]) all.push(list[n] as Request)
        expect(all.length).toBeGreaterThanOrEqual(total)

        const findings: Array<Finding> = []
        let next = 0
        const worker = async () => {
          while (next < all.length) {
            const request = all[next++] as Request
            const finding = await check(url, request)
            if (finding !== undefined) findings.push(finding)
          }
        }
        yield* Effect.promise(() => Promise.all(Array.from({ length: concurrency }, worker)))
        console.log(`fuzz: ${all.length} requests, ${[...classes].map(([k, n]) => `${n} × ${k}`).join(", ")}`)
        expect(findings.slice(0, 10), `${findings.length} findings`).toEqual([])
        // Still healthy afterwards.
        const health = yield* Effect.promise(() => fetch(`${url}/api/health`))
        expect(health.status).toBe(200)
      }),
    180_000
  )
})
