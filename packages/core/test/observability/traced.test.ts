import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Option, Tracer } from "effect"
import { Traced } from "../../src/observability/traced.js"

/** A tracer that records the names of the spans it is asked for. */
const recording = () => {
  const names: Array<string> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      names.push(name)
      return {
        _tag: "Span",
        name,
        spanId: `span-${names.length}`,
        traceId: "trace",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes: new Map(),
        links: [...links],
        sampled: true,
        kind,
        end: () => {},
        attribute: () => {},
        event: () => {},
        addLinks: () => {}
      }
    },
    context: (f) => f()
  })
  return { names, tracer }
}

/** The name of the span the body runs in, the argument doubled, and a pipeable that adds one. */
const operation = Traced.fn("Test.double")(
  function* (n: number) {
    const span = yield* Effect.option(Effect.currentSpan)
    return { doubled: n * 2, span: Option.getOrUndefined(Option.map(span, (s) => s.name)) }
  },
  (effect) => Effect.map(effect, (result) => ({ ...result, doubled: result.doubled + 1 }))
)

const failing = Traced.fn("Test.fail")(function* (reason: string) {
  return yield* Effect.fail(reason)
})

describe("Traced.fn", () => {
  it.effect("makes no span for Effect's default tracer, and runs the same body and pipeables", () =>
    Effect.gen(function* () {
      expect(yield* operation(4)).toEqual({ doubled: 9, span: undefined })
      expect(yield* Effect.flip(failing("no"))).toBe("no")
      expect(operation.length).toBe(1)
    })
  )

  it.effect("makes its span once a tracer is installed, with the same result", () =>
    Effect.gen(function* () {
      const { names, tracer } = recording()
      const result = yield* operation(4).pipe(Effect.withTracer(tracer))
      expect(result).toEqual({ doubled: 9, span: "Test.double" })
      expect(yield* Effect.flip(failing("no").pipe(Effect.withTracer(tracer)))).toBe("no")
      expect(names).toEqual(["Test.double", "Test.fail"])
    })
  )

  it.effect("makes no span where tracing is turned off, whatever the tracer", () =>
    Effect.gen(function* () {
      const { names, tracer } = recording()
      const result = yield* operation(1).pipe(Effect.withTracerEnabled(false), Effect.withTracer(tracer))
      expect(result).toEqual({ doubled: 3, span: undefined })
      expect(names).toEqual([])
    })
  )
})

describe("Traced.fn with a body that returns an effect", () => {
  const plain = Traced.fn("Test.plain")(
    (n: number) => Effect.succeed(n * 2),
    (effect, n) => Effect.map(effect, (doubled) => doubled + n)
  )
  const throwing = Traced.fn("Test.throwing")((_: number): Effect.Effect<number> => {
    throw new Error("broken")
  })

  it.effect("runs it, its pipeables, and a throw as a defect, traced or not", () =>
    Effect.gen(function* () {
      const { names, tracer } = recording()
      expect(yield* plain(3)).toBe(9)
      expect(yield* plain(3).pipe(Effect.withTracer(tracer))).toBe(9)
      expect(names).toEqual(["Test.plain"])
      const defect = yield* Effect.exit(throwing(1))
      expect(defect._tag === "Failure" && Cause.isDie(defect.cause)).toBe(true)
    })
  )
})

describe("Traced.withSpan", () => {
  const inSpan = Effect.map(Effect.option(Effect.currentSpan), (span) =>
    Option.getOrUndefined(Option.map(span, (s) => s.name))
  ).pipe(Traced.withSpan("Test.around", { attributes: { n: 1 } }))

  it.effect("makes its span only where spans are observed, and runs the effect either way", () =>
    Effect.gen(function* () {
      expect(yield* inSpan).toBeUndefined()
      const { names, tracer } = recording()
      expect(yield* inSpan.pipe(Effect.withTracer(tracer))).toBe("Test.around")
      expect(yield* inSpan.pipe(Effect.withTracerEnabled(false), Effect.withTracer(tracer))).toBeUndefined()
      expect(names).toEqual(["Test.around"])
    })
  )
})
