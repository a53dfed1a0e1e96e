import { it } from "@effect/vitest"
import { Errors, type Identifier } from "@opencode-ai/schema"
import { Effect, Exit, Layer } from "effect"
import { expect } from "vitest"
import { KnownSessions } from "../../src/session/known-sessions.js"
import { Sessions } from "../../src/session/sessions.js"
import { world } from "./world.js"

const id = "ses_known_test" as Identifier.SessionID

it.scoped("a missing session is not remembered: once created it is found", () =>
  Effect.gen(function* () {
    const w = yield* world
    const context = yield* Layer.build(w.core())
    const known = yield* Effect.provide(KnownSessions.Service, context)
    const sessions = yield* Effect.provide(Sessions.Service, context)
    expect(yield* Effect.exit(known.ensure(id))).toEqual(Exit.fail(Errors.SessionNotFoundError.of(id)))
    yield* sessions.create({ id, location: w.location })
    expect(yield* Effect.exit(known.ensure(id))).toEqual(Exit.void)
  })
)

it.scoped("what one database knows is not known to another in the same process", () =>
  Effect.gen(function* () {
    const [a, b] = [yield* world, yield* world]
    const first = yield* Layer.build(a.core())
    const second = yield* Layer.build(b.core())
    yield* Effect.provide(
      Effect.flatMap(Sessions.Service, (s) => s.create({ id, location: a.location })),
      first
    )
    const ensure = Effect.flatMap(KnownSessions.Service, (known) => Effect.exit(known.ensure(id)))
    expect(yield* Effect.provide(ensure, first)).toEqual(Exit.void)
    expect(yield* Effect.provide(ensure, second)).toEqual(Exit.fail(Errors.SessionNotFoundError.of(id)))
  })
)
