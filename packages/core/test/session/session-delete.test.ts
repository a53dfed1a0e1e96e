import { it } from "@effect/vitest"
import { Errors } from "@opencode-ai/schema"
import { Chunk, Effect, Exit, Fiber, Stream } from "effect"
import { expect } from "vitest"
import { EventLog } from "../../src/event/event-log.js"
import { LiveBus } from "../../src/event/live-bus.js"
import { InstructionEntries } from "../../src/instructions/instruction-entries.js"
import { KnownSessions } from "../../src/session/known-sessions.js"
import { SessionDelete } from "../../src/session/session-delete.js"
import { Sessions } from "../../src/session/sessions.js"
import { withCore } from "./world.js"

it.scopedLive("deletes a session with its descendants, forgets them, announces each, and ends their follows", () =>
  withCore((w) =>
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const deletion = yield* SessionDelete.Service
      const known = yield* KnownSessions.Service
      const log = yield* EventLog.Service
      const bus = yield* LiveBus.Service
      const entries = yield* InstructionEntries.Service
      const parent = yield* sessions.create({ location: w.location })
      const child = yield* sessions.create({ location: w.location, parentID: parent.id })
      const grandchild = yield* sessions.create({ location: w.location, parentID: child.id })
      const other = yield* sessions.create({ location: w.location })
      yield* entries.put(grandchild.id, "style", "terse")
      yield* entries.put(other.id, "style", "verbose")
      yield* known.ensure(child.id)

      const onBus = yield* bus.subscribe()
      const followed = yield* log.follow(child.id).pipe(Stream.runCollect, Effect.fork)
      const removed = yield* deletion.remove(parent.id)
      expect(removed.sessions.map((session) => session.id)).toEqual([parent.id, child.id, grandchild.id])

      for (const id of [parent.id, child.id, grandchild.id]) {
        expect(yield* Effect.exit(sessions.get(id))).toEqual(Exit.fail(Errors.SessionNotFoundError.of(id)))
        expect(yield* Effect.exit(known.ensure(id))).toEqual(Exit.fail(Errors.SessionNotFoundError.of(id)))
        expect(yield* log.read(id, { after: -1 })).toEqual([])
      }
      expect(yield* Fiber.join(followed)).toEqual(Chunk.empty())
      const announced = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(onBus, 3)))
      expect(announced.map((envelope) => [envelope.type, (envelope.data as { sessionID: string }).sessionID])).toEqual([
        ["session.deleted", parent.id],
        ["session.deleted", child.id],
        ["session.deleted", grandchild.id]
      ])
      expect((announced[1]!.data as { info: { parentID: string } }).info.parentID).toBe(parent.id)

      // The unrelated session keeps everything; a second delete is a SessionNotFoundError.
      expect(yield* sessions.get(other.id)).toEqual(other)
      expect(yield* entries.list(other.id)).toHaveLength(1)
      expect(yield* Effect.exit(deletion.remove(parent.id))).toEqual(
        Exit.fail(Errors.SessionNotFoundError.of(parent.id))
      )
      expect((yield* sessions.list()).data.map((session) => session.id)).toEqual([other.id])
    })
  )
)

it.scopedLive("deleting a child leaves its parent", () =>
  withCore((w) =>
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const deletion = yield* SessionDelete.Service
      const parent = yield* sessions.create({ location: w.location })
      const child = yield* sessions.create({ location: w.location, parentID: parent.id })
      expect((yield* deletion.remove(child.id)).sessions.map((session) => session.id)).toEqual([child.id])
      expect(yield* sessions.get(parent.id)).toEqual(parent)
      expect(yield* Effect.exit(sessions.get(child.id))).toEqual(Exit.fail(Errors.SessionNotFoundError.of(child.id)))
    })
  )
)
