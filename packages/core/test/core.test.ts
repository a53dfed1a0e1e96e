import { it } from "@effect/vitest"
import { Errors } from "@opencode-ai/schema"
import { Context, Effect, Exit, Layer, Queue } from "effect"
import * as path from "node:path"
import { expect } from "vitest"
import { Core } from "../src/core.js"
import { EventLog } from "../src/event/event-log.js"
import { Locations } from "../src/location/locations.js"
import { Sessions } from "../src/session/sessions.js"
import { tempDir } from "./fixture.js"

it.scoped("data survives closing the layer and reopening the same file", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const core = () => Core.layer({ databaseFile: path.join(dir, "data", "opencode.db"), directory: dir })
    const created = yield* Effect.gen(function* () {
      const location = yield* (yield* Locations.Service).resolve()
      const session = yield* (yield* Sessions.Service).create({ location })
      yield* (yield* EventLog.Service).append(session.id, [{ type: "test.noted", version: 1, data: { n: 1 } }])
      return session
    }).pipe(Effect.provide(core()))

    yield* Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const log = yield* EventLog.Service
      expect(yield* sessions.get(created.id)).toEqual(created)
      expect((yield* sessions.list()).data).toEqual([created])
      expect((yield* log.read(created.id)).map((envelope) => envelope.type)).toEqual(["session.created", "test.noted"])
      const appended = yield* log.append(created.id, [{ type: "test.noted", version: 1, data: { n: 2 } }])
      expect(appended[0]?.durable.seq).toBe(3)
    }).pipe(Effect.provide(core()))
  })
)

it.scoped("two Core layers on two files share nothing, even built with one memo map", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const memoMap = yield* Layer.makeMemoMap
    const scope = yield* Effect.scope
    const build = (name: string) =>
      Layer.buildWithMemoMap(Core.layer({ databaseFile: path.join(dir, `${name}.db`), directory: dir }), memoMap, scope)
    const a = yield* build("a")
    const b = yield* build("b")
    const sessionsA = Context.get(a, Sessions.Service)
    const sessionsB = Context.get(b, Sessions.Service)
    const liveB = yield* Context.get(b, EventLog.Service).subscribe

    const location = yield* Context.get(a, Locations.Service).resolve()
    const session = yield* sessionsA.create({ location })
    expect(yield* sessionsA.get(session.id)).toEqual(session)
    expect(yield* Effect.exit(sessionsB.get(session.id))).toEqual(Exit.fail(Errors.SessionNotFoundError.of(session.id)))
    expect((yield* sessionsB.list()).data).toEqual([])
    expect(yield* Queue.size(liveB)).toBe(0)
    expect(yield* Context.get(b, EventLog.Service).read(session.id)).toEqual([])
  })
)

it.scoped("the default Location is the instance directory", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const location = yield* Effect.flatMap(Locations.Service, (locations) => locations.resolve()).pipe(
      Effect.provide(Core.layer({ databaseFile: path.join(dir, "opencode.db"), directory: dir }))
    )
    expect(location.directory).toBe(dir)
  })
)
