import { describe, it } from "@effect/vitest"
import { Cause, Context, Effect, Either, Exit, Layer, Option, Scope } from "effect"
import { expect } from "vitest"
import { Assembly } from "../src/assembly.js"

class First extends Context.Tag("test/First")<First, { readonly n: number }>() {}
class Second extends Context.Tag("test/Second")<Second, { readonly sum: number }>() {}
class Outer extends Context.Tag("test/Outer")<Outer, string>() {}

/** A layer of `tag` that records its build and its release in `log`. */
const recorded = <I, S, R>(
  tag: Context.Tag<I, S>,
  name: string,
  log: Array<string>,
  make: Effect.Effect<S, never, R>
) =>
  Layer.scoped(
    tag,
    Effect.acquireRelease(
      Effect.tap(make, () => Effect.sync(() => log.push(`build ${name}`))),
      () => Effect.sync(() => log.push(`release ${name}`))
    )
  )

describe("Assembly", () => {
  it.effect("builds each layer over what the assembly started from and what was added before it", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const assembly = yield* Assembly.make(yield* Layer.makeMemoMap).pipe(
        Effect.provideService(Outer, "outer"),
        Effect.provideService(Scope.Scope, scope)
      )
      yield* assembly.add(Layer.succeed(First, { n: 2 }))
      yield* assembly.add(
        Layer.effect(
          Second,
          Effect.gen(function* () {
            const first = yield* First
            const outer = yield* Outer
            return { sum: first.n + outer.length }
          })
        )
      )
      expect(assembly.get(Second).sum).toBe(7)
      expect(Context.get(assembly.context() as Context.Context<Outer>, Outer)).toBe("outer")
      // A missing service is a defect, named by its tag.
      const missing = yield* Effect.exit(
        Effect.sync(() => assembly.get(Context.GenericTag<"absent", number>("absent")))
      )
      expect(Exit.isFailure(missing) && Cause.isDie(missing.cause)).toBe(true)
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.effect("releases in the reverse order of the builds, when its Scope closes", () =>
    Effect.gen(function* () {
      const log: Array<string> = []
      const scope = yield* Scope.make()
      const assembly = yield* Assembly.make(yield* Layer.makeMemoMap).pipe(Effect.provideService(Scope.Scope, scope))
      yield* assembly.add(recorded(First, "first", log, Effect.succeed({ n: 1 })))
      yield* assembly.add(
        recorded(
          Second,
          "second",
          log,
          Effect.map(First, (first) => ({ sum: first.n }))
        )
      )
      expect(log).toEqual(["build first", "build second"])
      yield* Scope.close(scope, Exit.void)
      expect(log).toEqual(["build first", "build second", "release second", "release first"])
    })
  )

  it.effect("a failed build fails add; what was built before is released with the Scope", () =>
    Effect.gen(function* () {
      const log: Array<string> = []
      const scope = yield* Scope.make()
      const assembly = yield* Assembly.make(yield* Layer.makeMemoMap).pipe(Effect.provideService(Scope.Scope, scope))
      yield* assembly.add(recorded(First, "first", log, Effect.succeed({ n: 1 })))
      const failed = yield* Effect.either(assembly.add(Layer.fail("no second")))
      expect(Either.getLeft(failed)).toEqual(Option.some("no second"))
      yield* Scope.close(scope, Exit.void)
      expect(log).toEqual(["build first", "release first"])
    })
  )

  it.effect("builds one layer value once per MemoMap: shared within an assembly, not between two", () =>
    Effect.gen(function* () {
      let builds = 0
      const counted = Layer.effect(
        First,
        Effect.sync(() => ({ n: ++builds }))
      )
      const inside = Layer.effect(
        Second,
        Effect.map(First, (first) => ({ sum: first.n }))
      ).pipe(Layer.provide(counted))
      const scope = yield* Scope.make()
      const one = yield* Assembly.make(yield* Layer.makeMemoMap).pipe(Effect.provideService(Scope.Scope, scope))
      yield* one.add(counted)
      yield* one.add(inside)
      expect(builds).toBe(1)
      expect(one.get(Second).sum).toBe(1)
      const two = yield* Assembly.make(yield* Layer.makeMemoMap).pipe(Effect.provideService(Scope.Scope, scope))
      yield* two.add(counted)
      expect(builds).toBe(2)
      expect(two.get(First).n).toBe(2)
      expect(one.get(First).n).toBe(1)
      // Through the MemoMap of the graph it is built in, an assembly shares that graph's layers.
      const shared = yield* Effect.gen(function* () {
        const graph = Layer.effectContext(
          Effect.gen(function* () {
            const assembly = yield* Assembly.make(yield* Layer.CurrentMemoMap)
            yield* assembly.add(inside)
            return Context.empty()
          }).pipe(Effect.scoped)
        )
        return yield* Layer.build(Layer.merge(counted, graph))
      }).pipe(Effect.provideService(Scope.Scope, scope))
      expect(Context.get(shared, First).n).toBe(3)
      expect(builds).toBe(3)
      yield* Scope.close(scope, Exit.void)
    })
  )
})
