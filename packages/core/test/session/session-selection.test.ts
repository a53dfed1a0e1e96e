import { it } from "@effect/vitest"
import { Errors, Identifier } from "@opencode-ai/schema"
import { Effect, Exit } from "effect"
import { describe, expect } from "vitest"
import { EventLog } from "../../src/event/event-log.js"
import { SessionHistory } from "../../src/session/session-history.js"
import { SessionSelection } from "../../src/session/session-selection.js"
import { Sessions } from "../../src/session/sessions.js"
import { createSession, withCore } from "./world.js"

const types = (sessionID: string) =>
  Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)).pipe(
    Effect.map((events) => events.map((event) => event.type))
  )

const field = <A>(effect: Effect.Effect<A, Errors.InvalidRequestError | Errors.SessionNotFoundError>) =>
  Effect.map(Effect.flip(effect), (error) => ({
    tag: error._tag,
    field: error._tag === "InvalidRequestError" ? error.field : undefined
  }))

describe("SessionSelection", () => {
  it.scoped(
    "switchAgent selects a known agent from the next Step on: one event, a marker message, session.agent; repeating it appends nothing",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const selection = yield* SessionSelection.Service
          const session = yield* createSession(w)
          yield* selection.switchAgent(session.id, "plan")
          yield* selection.switchAgent(session.id, "plan")
          expect(yield* types(session.id)).toEqual(["session.next.agent.switched"])
          expect((yield* (yield* Sessions.Service).get(session.id)).agent).toBe("plan")
          const messages = yield* (yield* SessionHistory.Service).messages(session.id)
          expect(messages.data).toMatchObject([{ type: "agent-switched", agent: "plan" }])
        })
      )
  )

  it.scoped("switchModel selects a configured model; the same model again appends nothing", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const selection = yield* SessionSelection.Service
        const session = yield* createSession(w)
        const llama = { providerID: "local", id: "llama" }
        yield* selection.switchModel(session.id, llama)
        yield* selection.switchModel(session.id, llama)
        yield* selection.switchModel(session.id, { ...llama, variant: "fast" })
        expect(yield* types(session.id)).toEqual(["session.next.model.switched", "session.next.model.switched"])
        expect((yield* (yield* Sessions.Service).get(session.id)).model).toEqual({ ...llama, variant: "fast" })
      })
    )
  )

  it.scoped(
    "unknown or hidden agents and unknown models are rejected (400, never silently accepted); unknown sessions are 404 first",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const selection = yield* SessionSelection.Service
          const session = yield* createSession(w)
          expect(yield* field(selection.switchAgent(session.id, "nobody"))).toEqual({
            tag: "InvalidRequestError",
            field: "agent"
          })
          expect(yield* field(selection.switchAgent(session.id, "compaction"))).toEqual({
            tag: "InvalidRequestError",
            field: "agent"
          })
          expect(yield* field(selection.switchModel(session.id, { providerID: "local", id: "gpt" }))).toEqual({
            tag: "InvalidRequestError",
            field: "model"
          })
          expect(yield* field(selection.switchModel(session.id, { providerID: "elsewhere", id: "qwen" }))).toEqual({
            tag: "InvalidRequestError",
            field: "model"
          })
          expect(yield* Effect.exit(selection.switchAgent(Identifier.SessionID.make("ses_missing"), "nobody"))).toEqual(
            Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
          )
          expect(
            yield* Effect.exit(
              selection.switchModel(Identifier.SessionID.make("ses_missing"), { providerID: "x", id: "y" })
            )
          ).toEqual(Exit.fail(Errors.SessionNotFoundError.of("ses_missing")))
          expect(yield* types(session.id)).toEqual([])
        })
      )
  )

  it.scoped("switchModel rejects a variant the model does not have, or has disabled, naming the ones it has", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const selection = yield* SessionSelection.Service
        const session = yield* createSession(w)
        const unknown = yield* Effect.flip(
          selection.switchModel(session.id, { providerID: "local", id: "llama", variant: "slow" })
        )
        expect(unknown).toMatchObject({ _tag: "InvalidRequestError", field: "model" })
        expect(unknown.message).toContain('Model local/llama has no variant "slow" (its variants: fast)')
        const disabled = yield* Effect.flip(
          selection.switchModel(session.id, { providerID: "local", id: "llama", variant: "deep" })
        )
        expect(disabled.message).toContain('has no enabled variant "deep"')
        const none = yield* Effect.flip(
          selection.switchModel(session.id, { providerID: "local", id: "qwen", variant: "fast" })
        )
        expect(none.message).toContain("(it has no variants)")
        expect(yield* types(session.id)).toEqual([])
      })
    )
  )
})
