export * as Traced from "./traced.js"

import { Context, Effect, type Fiber, FiberRef, Tracer } from "effect"

/**
 * The tracer a fiber has when nobody installed one: Effect's own, which keeps spans in memory and
 * sends them nowhere.
 */
const defaultTracer = Effect.runSync(Effect.tracer)

/**
 * Whether spans made on `fiber` reach anyone: tracing is on, and its tracer is not Effect's default
 * (an OTLP exporter, see the server's Trace Export, or a tracer a test or bench installed).
 */
export const observed = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean =>
  fiber.getFiberRef(FiberRef.currentTracerEnabled) &&
  Context.get(fiber.currentDefaultServices, Tracer.Tracer) !== defaultTracer

const isGenerator = (body: unknown): boolean =>
  typeof body === "function" && body.constructor?.name === "GeneratorFunction"

/**
 * `Effect.fn(name)`, with its span made only where spans are {@link observed}; elsewhere the same
 * body and pipeables as `Effect.fnUntraced`. A span costs 7–10 µs per call (the call site's stack,
 * the span, the context that carries it), several times a small service call, and a process that
 * exports no spans would make some hundred of them per turn for nothing. Same signature and
 * semantics as `Effect.fn` otherwise: the decision is made at each call, from the calling fiber.
 */
export const fn: typeof Effect.fn = ((name: string, options?: Tracer.SpanOptions) =>
  // biome-ignore lint/suspicious/noExplicitAny: forwards Effect.fn's own overloads unchanged.
  (body: any, ...pipeables: Array<any>) => {
    // biome-ignore lint/suspicious/noExplicitAny: see above.
    const traced: (...args: Array<any>) => Effect.Effect<any, any, any> = (Effect.fn as any)(name, options)(
      body,
      ...pipeables
    )
    // biome-ignore lint/suspicious/noExplicitAny: see above.
    const untraced: (...args: Array<any>) => Effect.Effect<any, any, any> = isGenerator(body)
      ? // biome-ignore lint/suspicious/noExplicitAny: see above.
        (Effect.fnUntraced as any)(body, ...pipeables)
      : function (this: unknown, ...args: Array<unknown>) {
          // As Effect.fn runs a body that returns an effect: called at once, a throw being a defect.
          let effect: Effect.Effect<unknown, unknown, unknown>
          try {
            effect = body.apply(this, args)
          } catch (error) {
            effect = Effect.die(error)
          }
          for (const pipeable of pipeables) effect = pipeable(effect, ...args)
          return effect
        }
    const call = function (this: unknown, ...args: Array<unknown>) {
      return Effect.withFiberRuntime<any, any, any>((fiber) => (observed(fiber) ? traced : untraced).apply(this, args))
    }
    return Object.defineProperty(call, "length", { value: body.length, configurable: true })
  }) as unknown as typeof Effect.fn

/**
 * `Effect.withSpan(name, options)` with the span made only where spans are {@link observed}: elsewhere
 * `effect` runs as it is. Effect makes a span (and captures its call site's stack) whatever the
 * tracer, which on a Step's path cost tens of microseconds for nothing.
 */
export const withSpan =
  (name: string, options?: Tracer.SpanOptions) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) => (observed(fiber) ? Effect.withSpan(effect, name, options) : effect))
