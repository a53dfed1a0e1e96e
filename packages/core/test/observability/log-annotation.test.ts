import { describe, it } from "@effect/vitest"
import { Effect, FiberRef, HashMap, Logger, Option } from "effect"
import { expect } from "vitest"
import { LogAnnotation } from "../../src/observability/log-annotation.js"

/** Runs `effect` with a logger that records each line's message and annotations. */
const logged = <A, E>(effect: Effect.Effect<A, E>) => {
  const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
  const logger = Logger.make(({ message, annotations }) => {
    lines.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
  })
  return Effect.map(Effect.provide(effect, Logger.replace(Logger.defaultLogger, logger)), () => lines)
}

/** The sessionID among the fiber's log annotations. */
const annotationsSeen = Effect.map(FiberRef.get(FiberRef.currentLogAnnotations), (annotations) =>
  HashMap.get(annotations, "sessionID")
)

describe("LogAnnotation", () => {
  it.effect("annotates the effect's log lines with the session, whether or not the fiber already holds it", () =>
    Effect.gen(function* () {
      const lines = yield* logged(
        Effect.gen(function* () {
          yield* LogAnnotation.session(Effect.logInfo("first"), "ses_a")
          // Already annotated with the same session: the line is the same.
          yield* LogAnnotation.session(LogAnnotation.session(Effect.logInfo("nested"), "ses_a"), "ses_a")
          // Another session inside: the inner one wins, as with Effect.annotateLogs.
          yield* LogAnnotation.session(LogAnnotation.session(Effect.logInfo("other"), "ses_b"), "ses_a")
          yield* Effect.logInfo("outside")
        })
      )
      expect(lines.map((line) => [line.message, line.annotations.sessionID])).toEqual([
        [["first"], "ses_a"],
        [["nested"], "ses_a"],
        [["other"], "ses_b"],
        [["outside"], undefined]
      ])
    })
  )

  it.effect("leaves the fiber's annotations as they were once the effect ends, and keeps other keys", () =>
    Effect.gen(function* () {
      const inside = yield* Effect.annotateLogs(LogAnnotation.session(annotationsSeen, "ses_a"), { tool: "bash" }).pipe(
        Effect.zip(FiberRef.get(FiberRef.currentLogAnnotations).pipe(Effect.map(HashMap.size)))
      )
      expect(inside).toEqual([Option.some("ses_a"), 0])
      const kept = yield* Effect.annotateLogs(
        LogAnnotation.annotate(FiberRef.get(FiberRef.currentLogAnnotations), "sessionID", "ses_a"),
        { sessionID: "ses_a", tool: "bash" }
      )
      expect(Object.fromEntries(HashMap.toEntries(kept))).toEqual({ sessionID: "ses_a", tool: "bash" })
      expect(HashMap.size(yield* FiberRef.get(FiberRef.currentLogAnnotations))).toBe(0)
    })
  )

  it.effect("an aggregate is named by aggregateID, unless the line's sessionID already is that id", () =>
    Effect.gen(function* () {
      const lines = yield* logged(
        Effect.gen(function* () {
          yield* LogAnnotation.aggregate(Effect.logInfo("alone"), "ses_a")
          yield* LogAnnotation.session(LogAnnotation.aggregate(Effect.logInfo("its session"), "ses_a"), "ses_a")
          yield* LogAnnotation.session(LogAnnotation.aggregate(Effect.logInfo("another log"), "agg_b"), "ses_a")
        })
      )
      expect(lines.map((line) => [line.message, line.annotations])).toEqual([
        [["alone"], { aggregateID: "ses_a" }],
        [["its session"], { sessionID: "ses_a" }],
        [["another log"], { sessionID: "ses_a", aggregateID: "agg_b" }]
      ])
    })
  )
})
