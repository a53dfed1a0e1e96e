import { Sharding, TestRunner } from "@effect/cluster"
import { it } from "@effect/vitest"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Layer, Schema } from "effect"
import { describe, expect } from "vitest"
import { ClusterPlacement } from "../../src/runner/cluster-placement.js"
import { SessionPlacement } from "../../src/runner/session-placement.js"
import { ShardLeases } from "../../src/runner/shard-leases.js"

describe("SessionPlacement.apartFrom (a subagent's child session id)", () => {
  it.scoped(
    "with cluster placement, never in the parent's shard (a handover of that shard waits for the parent's drain, which waits for the child)",
    () =>
      Effect.gen(function* () {
        const sharding = yield* Sharding.Sharding
        const placement = yield* SessionPlacement.Service
        const parent = Identifier.newSessionID()
        const shard = ShardLeases.shardOf(sharding, parent)
        // 3,000 ids drawn at random would share the parent's shard (1 in 300) about ten times.
        const children = Array.from({ length: 3_000 }, () => placement.apartFrom(parent))
        expect(new Set(children).size).toBe(children.length)
        expect(children.filter((child) => ShardLeases.shardOf(sharding, child) === shard)).toEqual([])
        expect(children.every((child) => Schema.is(Identifier.SessionID)(child))).toBe(true)
      }).pipe(Effect.provide(ClusterPlacement.routing.pipe(Layer.provideMerge(TestRunner.layer))))
  )

  it.effect("with first-come leases, a new session id", () =>
    Effect.gen(function* () {
      const placement = yield* SessionPlacement.Service
      const parent = Identifier.newSessionID()
      const child = placement.apartFrom(parent)
      expect(Schema.is(Identifier.SessionID)(child)).toBe(true)
      expect(child).not.toBe(parent)
    }).pipe(Effect.provide(SessionPlacement.local))
  )
})
