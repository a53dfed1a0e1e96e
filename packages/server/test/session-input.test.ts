import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { call, configHome, startServer } from "./harness.js"

const config = {
  provider: {
    local: {
      npm: "@ai-sdk/openai-compatible",
      options: { baseURL: "http://127.0.0.1:1/v1" },
      models: { qwen: {}, llama: {} }
    }
  },
  model: "local/qwen"
}

/** A server with {@link config} and one fresh session; every prompt below is admit-only (`resume: false`). */
const setup = Effect.gen(function* () {
  const server = yield* startServer({ XDG_CONFIG_HOME: configHome(config) })
  const session = (yield* call(`${server.url}/api/session`, "POST", {})).body.data
  return { ...server, session, base: `${server.url}/api/session/${session.id}` }
})

describe("POST /api/session/{sessionID}/prompt", () => {
  it.scoped("admits durably and idempotently by id; the same id with other content is a 409", () =>
    Effect.gen(function* () {
      const { base, session, directory } = yield* setup
      fs.writeFileSync(path.join(directory, "notes.md"), "# notes\n")
      const id = "msg_00000000000100000000000001"
      const body = {
        id,
        prompt: { text: "read @notes", files: [{ uri: "notes.md", name: "notes" }] },
        delivery: "queue",
        resume: false
      }
      const first = yield* call(`${base}/prompt`, "POST", body)
      expect(first).toEqual({
        status: 200,
        body: {
          data: {
            admittedSeq: 1,
            id,
            sessionID: session.id,
            prompt: {
              text: "read @notes",
              files: [
                {
                  uri: pathToFileURL(path.join(fs.realpathSync(directory), "notes.md")).href,
                  mime: "text/markdown",
                  name: "notes"
                }
              ]
            },
            delivery: "queue",
            timeCreated: first.body.data.timeCreated
          }
        }
      })
      expect(yield* call(`${base}/prompt`, "POST", body)).toEqual(first)
      const conflict = yield* call(`${base}/prompt`, "POST", { ...body, prompt: { text: "something else" } })
      expect(conflict.status).toBe(409)
      expect(conflict.body).toMatchObject({ _tag: "ConflictError", resource: "prompt" })

      const fresh = yield* call(`${base}/prompt`, "POST", { prompt: { text: "hi" }, resume: false })
      expect(fresh.status).toBe(200)
      expect(fresh.body.data).toMatchObject({ admittedSeq: 2, delivery: "steer", prompt: { text: "hi" } })
      expect(fresh.body.data.id).toMatch(/^msg_/)
      expect(fresh.body.data).not.toHaveProperty("promotedSeq")

      const history = yield* call(`${base}/history`, "GET")
      expect(history.body.data.map((event: { type: string }) => event.type)).toEqual([
        "session.next.prompt.admitted",
        "session.next.prompt.admitted"
      ])
    })
  )
})

describe("agent and model switches, messages, message, context and history", () => {
  it.scoped(
    "switches are 204 and recorded; messages page with cursors; message, context and history read them back",
    () =>
      Effect.gen(function* () {
        const { url, base, session } = yield* setup
        expect(yield* call(`${base}/agent`, "POST", { agent: "plan" })).toEqual({ status: 204, body: undefined })
        expect(yield* call(`${base}/model`, "POST", { model: { providerID: "local", id: "llama" } })).toEqual({
          status: 204,
          body: undefined
        })
        expect(yield* call(`${base}/agent`, "POST", { agent: "build" })).toEqual({ status: 204, body: undefined })
        const info = (yield* call(`${base}`, "GET")).body.data
        expect(info).toMatchObject({ agent: "build", model: { providerID: "local", id: "llama" } })

        // Newest first by default, one per page, walked with the next cursor.
        const walked: Array<string> = []
        let page = (yield* call(`${base}/message?limit=1`, "GET")).body
        for (;;) {
          walked.push(
            page.data.map((m: { type: string; agent?: string }) => `${m.type}${m.agent ? `:${m.agent}` : ""}`).join()
          )
          if (page.cursor.next === undefined) break
          // Upstream clients send `limit` again with every cursor.
          page = (yield* call(`${base}/message?cursor=${page.cursor.next}&limit=1`, "GET")).body
        }
        expect(walked).toEqual(["agent-switched:build", "model-switched", "agent-switched:plan"])
        const cursor = (yield* call(`${base}/message?limit=1`, "GET")).body.cursor.next
        const withOrder = yield* call(`${base}/message?cursor=${cursor}&order=asc`, "GET")
        expect(withOrder).toMatchObject({ status: 400, body: { _tag: "InvalidCursorError" } })

        const ascending = (yield* call(`${base}/message?order=asc`, "GET")).body
        expect(ascending.cursor).toEqual({})
        const first = ascending.data[0]
        expect(first).toEqual({
          id: first.id,
          time: { created: first.time.created },
          type: "agent-switched",
          agent: "plan"
        })
        expect(yield* call(`${base}/message/${first.id}`, "GET")).toEqual({ status: 200, body: { data: first } })

        // Another session cannot read it, and is not told it exists.
        const other = (yield* call(`${url}/api/session`, "POST", {})).body.data
        const hidden = yield* call(`${url}/api/session/${other.id}/message/${first.id}`, "GET")
        expect(hidden.status).toBe(404)
        expect(hidden.body).toMatchObject({ _tag: "MessageNotFoundError", sessionID: other.id, messageID: first.id })
        const foreignCursor = yield* call(`${url}/api/session/${other.id}/message?cursor=${cursor}`, "GET")
        expect(foreignCursor.body._tag).toBe("InvalidCursorError")

        expect((yield* call(`${base}/context`, "GET")).body.data.map((m: { type: string }) => m.type)).toEqual([
          "agent-switched",
          "model-switched",
          "agent-switched"
        ])

        const history = (yield* call(`${base}/history?after=1&limit=1`, "GET")).body
        expect(history).toEqual({
          data: [
            {
              id: history.data[0].id,
              type: "session.next.model.switched",
              durable: { aggregateID: session.id, seq: 2, version: 1 },
              data: {
                timestamp: history.data[0].data.timestamp,
                sessionID: session.id,
                messageID: ascending.data[1].id,
                model: { providerID: "local", id: "llama" }
              }
            }
          ],
          hasMore: true
        })
        expect((yield* call(`${base}/history?after=2`, "GET")).body.hasMore).toBe(false)
      })
  )

  it.scoped("unknown agents and models are rejected with 400, never a silent 204, and change nothing", () =>
    Effect.gen(function* () {
      const { base } = yield* setup
      const agent = yield* call(`${base}/agent`, "POST", { agent: "nobody" })
      expect(agent.status).toBe(400)
      expect(agent.body).toMatchObject({ _tag: "InvalidRequestError", field: "agent" })
      const model = yield* call(`${base}/model`, "POST", { model: { providerID: "local", id: "gpt-9" } })
      expect(model.status).toBe(400)
      expect(model.body).toMatchObject({ _tag: "InvalidRequestError", field: "model" })
      expect((yield* call(`${base}/history`, "GET")).body).toEqual({ data: [], hasMore: false })
      expect((yield* call(`${base}/message`, "GET")).body).toEqual({ data: [], cursor: {} })
    })
  )

  it.scoped("a session is not created with an agent or model the switches would refuse", () =>
    Effect.gen(function* () {
      const { url, session } = yield* setup
      const create = (body: object) => call(`${url}/api/session`, "POST", body)
      const refused = [
        [{ agent: "nobody" }, "agent", /Unknown agent "nobody"; available: build, plan/],
        // A hidden agent (the title agent) is not offered for selection.
        [{ agent: "title" }, "agent", /Unknown agent "title"/],
        [{ model: { providerID: "local", id: "gpt-9" } }, "model", /Unknown model "gpt-9" of provider "local"/],
        [{ model: { providerID: "elsewhere", id: "qwen" } }, "model", /Unknown provider "elsewhere"/],
        [{ model: { providerID: "local", id: "qwen", variant: "turbo" } }, "model", /turbo/],
        // With an explicit id too: nothing is created under it.
        [{ id: "ses_0000000000000000000000000009", agent: "nobody" }, "agent", /Unknown agent/]
      ] as const
      for (const [body, field, message] of refused) {
        const answer = yield* create(body)
        expect(answer.status).toBe(400)
        expect(answer.body).toMatchObject({ _tag: "InvalidRequestError", field })
        expect(answer.body.message).toMatch(message)
      }
      // Only the setup's session exists.
      expect((yield* call(`${url}/api/session`, "GET")).body.data.map((s: { id: string }) => s.id)).toEqual([
        session.id
      ])
      expect((yield* call(`${url}/api/session/ses_0000000000000000000000000009`, "GET")).status).toBe(404)
      const made = yield* create({ agent: "plan", model: { providerID: "local", id: "llama" } })
      expect(made.status).toBe(200)
      expect(made.body.data).toMatchObject({ agent: "plan", model: { providerID: "local", id: "llama" } })
    })
  )
})
