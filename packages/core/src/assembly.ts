export * as Assembly from "./assembly.js"

import { Context, Effect, Layer, type Scope } from "effect"

/**
 * Services built one after another into one Context: each layer is built in the assembly's Scope
 * over what the assembly started from (the building fiber's context) and everything added before
 * it. Finalizers run in the reverse order of the builds when that Scope closes, so a service added
 * first (a database, a bus) is released last. Layers are built through the assembly's MemoMap, so
 * one layer value added (or provided inside added layers) twice is built once: with a new MemoMap
 * (`Layer.makeMemoMap`) two assemblies share nothing; with `Layer.CurrentMemoMap` the assembly
 * shares with the graph it is built in (as a composed layer would).
 *
 * Why a host would assemble rather than compose: the Layer interpreter memoises every node of a
 * composed graph (each `Layer.provide`, `provideMerge`, `merge` or `fresh` is one, with its own
 * scope, deferred and memo-map entry), which costs several hundred runtime operations per node. An
 * assembly builds each layer once, with no sharing between two assemblies, in the order written.
 * What a composed graph gives and an assembly does not: requirements checked by the type checker
 * (a missing service is a defect when the layer that needs it is built) and concurrent builds.
 */
export interface Assembly {
  /**
   * Builds `layer` in the assembly's Scope, over everything assembled so far, and adds its services
   * (replacing any of the same tag). Fails with the layer's error; what was built before stays in the
   * Scope.
   */
  readonly add: <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>) => Effect.Effect<void, E>
  /** A service assembled so far (or one the assembly started from); a defect when missing. */
  readonly get: <I, S>(tag: Context.Tag<I, S>) => S
  /** Everything assembled so far, with what the assembly started from. */
  readonly context: () => Context.Context<unknown>
}

/** An assembly over the current fiber's context, building in the current Scope through `memoMap`. */
export const make = (memoMap: Layer.MemoMap): Effect.Effect<Assembly, never, Scope.Scope> =>
  Effect.map(Effect.zip(Effect.scope, Effect.context<never>()), ([scope, start]) => {
    let context = start as Context.Context<unknown>
    return {
      add: <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>) =>
        Effect.map(
          Effect.provide(Layer.buildWithMemoMap(layer, memoMap, scope), context as Context.Context<RIn>),
          (built): void => {
            context = Context.merge(context, built as Context.Context<unknown>)
          }
        ),
      get: <I, S>(tag: Context.Tag<I, S>) => Context.unsafeGet(context as Context.Context<I>, tag),
      context: () => context
    }
  })
