export * as Instructions from "./instructions.js"

/**
 * Instructions: the opaque algebra of independently refreshable, typed Instruction Sources that
 * render the durable Instruction Baseline and the chronological Instruction Updates shown to the
 * model.
 *
 * An Instruction Source is a stable namespaced {@link Key}, a JSON `codec`, a `load`er and pure
 * renderers. {@link make} hides the value type, so differently typed sources compose uniformly with
 * {@link combine}. Three operations observe the composed sources (each exactly once, concurrently)
 * and are otherwise pure:
 *
 * ```
 *                 initialize ──Blocked──▶ (no baseline; try again at the next boundary)
 *                     │
 *                  Complete {text, applied}         ◀── the Instruction Baseline
 *                     │
 *   ┌──────────▶ reconcile(applied) ──Unchanged──┐
 *   │                 │                          │
 *   │          Updated {text, applied'}          │  ◀── one combined Instruction Update
 *   └─────────────────┴──────────────────────────┘
 *                     │ completed compaction
 *                 rebaseline(applied) ──▶ Complete {text, applied'} | Blocked
 * ```
 *
 * Observation outcomes of one source, and what they mean:
 * - a value: the source's current state;
 * - {@link unavailable}: an expected, temporary inability to observe. The model keeps its prior
 *   belief (stale-while-revalidate); nothing is emitted, and a first baseline is blocked;
 * - {@link absent}: a successful observation that the source currently has nothing to say. It is
 *   treated like a source that is not composed: its pre-rendered removal text (if any) is emitted and
 *   it leaves {@link Applied}.
 *
 * Loaders must not fail: expected failures are reported as {@link unavailable} (see
 * {@link orUnavailable}). Defects and interruption of a loader propagate unchanged, and no partial
 * result is produced. Renderers that throw, and values the codec cannot encode to JSON, are defects.
 */

import { Data, Effect, Either, Fiber, Option, Schema } from "effect"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import { Traced } from "../observability/traced.js"

// ---------------------------------------------------------------------------------------------------
// Keys

const segment = "[a-z0-9][a-z0-9._-]*"

/** `namespace/name` (or deeper, `a/b/c`): two or more `/`-separated segments `[a-z0-9][a-z0-9._-]*`. */
export const keyPattern: RegExp = new RegExp(`^${segment}(?:/${segment})+$`)

/** The stable namespaced key of an Instruction Source, e.g. `core/environment` or `api/style`. */
export const Key = Schema.String.pipe(Schema.pattern(keyPattern), Schema.brand("InstructionKey")).annotations({
  identifier: "InstructionKey",
  description: "A stable namespaced Instruction Source key: `namespace/name`, lowercase segments [a-z0-9][a-z0-9._-]*"
})
export type Key = typeof Key.Type

/**
 * A key that does not match {@link keyPattern}. Source keys are fixed by code (or, for InstructionEntry,
 * validated at the API boundary first), so an invalid key is a broken invariant: {@link make} and
 * {@link key} *throw* this error, which is a defect when it happens inside an Effect.
 */
export class InvalidKey extends Data.TaggedError("InvalidInstructionKey")<{
  readonly key: string
  readonly message: string
}> {}

/**
 * Two composed sources share a key. The runner's declared order is fixed by code, so this is a broken
 * invariant: {@link combine} *throws* this error, which is a defect when it happens inside an Effect.
 */
export class DuplicateKey extends Data.TaggedError("DuplicateInstructionKey")<{
  readonly key: Key
  readonly message: string
}> {}

/** Whether `input` is a valid source key. */
export const isKey = (input: string): input is Key => keyPattern.test(input)

/** Validates a source key; throws {@link InvalidKey} (a defect) when it is malformed. */
export const key = (input: string): Key => {
  if (!isKey(input)) {
    throw new InvalidKey({
      key: input,
      message: `Invalid instruction source key ${JSON.stringify(input)}: expected namespace/name segments matching ${segment}`
    })
  }
  return input
}

// ---------------------------------------------------------------------------------------------------
// Applied Instructions

/** A JSON value, as stored in {@link Applied}: what a codec encodes a source value to. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

export const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Finite,
  Schema.String,
  Schema.Array(Schema.suspend((): Schema.Schema<Json> => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend((): Schema.Schema<Json> => Json) })
).annotations({ identifier: "InstructionJson" })

/** Plain JSON only: `Schema.is(Json)` alone would accept a `Date` or class instance as an empty record. */
const isJson = (u: unknown): u is Json => {
  if (u === null || typeof u === "boolean" || typeof u === "string") return true
  if (typeof u === "number") return Number.isFinite(u)
  if (Array.isArray(u)) return u.every(isJson)
  if (typeof u !== "object") return false
  const prototype = Object.getPrototypeOf(u)
  return (prototype === Object.prototype || prototype === null) && Object.values(u).every(isJson)
}

/**
 * What the model was last told about one source: the codec-encoded JSON value and, for removable
 * sources, the removal text pre-rendered from that value (so it can still be said after the source,
 * and its renderer, are no longer composed). `removal` is omitted when there is none.
 */
export const AppliedSource = Schema.Struct({
  key: Key,
  value: Json,
  removal: Schema.optional(Schema.String)
}).annotations({ identifier: "AppliedInstructionSource" })
export interface AppliedSource extends Schema.Schema.Type<typeof AppliedSource> {}

/**
 * Applied Instructions: the model-hidden record of what the model was last told per source key, in
 * the declared order of the Instructions that produced it. Keys are unique. JSON round-trips with
 * `Schema.parseJson(Applied)`.
 */
export const Applied = Schema.Struct({
  sources: Schema.Array(AppliedSource).pipe(
    Schema.filter((sources) => {
      const seen = new Set<string>()
      for (const source of sources) {
        if (seen.has(source.key)) return `duplicate instruction source key ${source.key}`
        seen.add(source.key)
      }
      return true
    })
  )
}).annotations({ identifier: "AppliedInstructions" })
export interface Applied extends Schema.Schema.Type<typeof Applied> {}

/** The Applied record of a model that has been told nothing. */
export const emptyApplied: Applied = { sources: [] }

// ---------------------------------------------------------------------------------------------------
// Observation markers

const MarkerTypeId: unique symbol = Symbol.for("@opencode-ai/core/Instructions/Marker")

/** A loader's explicit report that its value cannot be observed right now. See the module doc. */
export interface Unavailable {
  readonly [MarkerTypeId]: "Unavailable"
}

/** A loader's successful report that the source currently has no value. See the module doc. */
export interface Absent {
  readonly [MarkerTypeId]: "Absent"
}

export const unavailable: Unavailable = Object.freeze({ [MarkerTypeId]: "Unavailable" as const })
export const absent: Absent = Object.freeze({ [MarkerTypeId]: "Absent" as const })

/** What one load of a source of `A` produces. */
export type Observation<A> = A | Unavailable | Absent

export const isUnavailable = (u: unknown): u is Unavailable =>
  typeof u === "object" && u !== null && (u as { [MarkerTypeId]?: unknown })[MarkerTypeId] === "Unavailable"

export const isAbsent = (u: unknown): u is Absent =>
  typeof u === "object" && u !== null && (u as { [MarkerTypeId]?: unknown })[MarkerTypeId] === "Absent"

/**
 * Turns a loader's expected failures into {@link unavailable} (logged at debug level). Defects and
 * interruption are not caught.
 */
export const orUnavailable = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A | Unavailable, never, R> =>
  Effect.catchAll(self, (error) =>
    Effect.as(Effect.logDebug("instruction source unavailable", error), unavailable as A | Unavailable)
  )

// ---------------------------------------------------------------------------------------------------
// Sources and composition

/** The definition of one Instruction Source of value type `A`. */
export interface Spec<A, I, R> {
  /** Stable namespaced key (see {@link keyPattern}); never reuse a key for a differently shaped value. */
  readonly key: string
  /** Encodes the value to the JSON stored in {@link Applied}; its equivalence decides "changed". */
  readonly codec: Schema.Schema<A, I>
  /** Observes the current value once per operation, or reports {@link unavailable} / {@link absent}. */
  readonly load: Effect.Effect<Observation<NoInfer<A>>, never, R>
  /** The full statement of `value`, used in a baseline and when the model has not heard of the source. */
  readonly baseline: (value: NoInfer<A>) => string
  /**
   * States only the newly effective `value` after a change; `previous` (the value the model was last
   * told) is provided for wording such as "supersedes", not for diffs.
   */
  readonly update: (value: NoInfer<A>, previous: NoInfer<A>) => string
  /** Says that the source no longer applies; pre-rendered from each applied value and stored. */
  readonly removed?: string | ((previous: NoInfer<A>) => string)
  /**
   * `load` never waits: it reads memory or the clock, or makes synchronous calls only. Such a source is
   * observed in the caller's fiber while the others load concurrently (a fiber of its own would only
   * add the cost of starting and joining it). Default `false`.
   */
  readonly immediate?: boolean
}

const TypeId: unique symbol = Symbol.for("@opencode-ai/core/Instructions")

/**
 * Composed Instruction Sources needing `R` to load. Opaque: the value types are hidden, and only the
 * declared key order is visible.
 */
export interface Instructions<out R = never> extends Pipeable {
  readonly [TypeId]: { readonly _R: (_: never) => R }
  /** The composed source keys, in declared order. */
  readonly keys: ReadonlyArray<Key>
}

/** The requirements of an Instructions value. */
export type Context<T> = T extends Instructions<infer R> ? R : never

/** The comparison of a freshly loaded value against the one the model was last told. */
type Comparison =
  | { readonly _tag: "Equivalent" }
  | { readonly _tag: "Changed"; readonly text: string }
  | { readonly _tag: "Undecodable" }

/** One observation with the value type erased: everything the operations need, already rendered. */
type Observed =
  | { readonly _tag: "Unavailable" }
  | { readonly _tag: "Absent" }
  | {
      readonly _tag: "Loaded"
      readonly entry: AppliedSource
      readonly baseline: string
      readonly against: (prior: Json) => Comparison
    }

/** A source with its value type erased. */
interface Source {
  readonly key: Key
  readonly observe: Effect.Effect<Observed, never, unknown>
  /** See {@link Spec.immediate}. */
  readonly immediate: boolean
  /** Decodes a stored value and renders its baseline; `None` when it no longer decodes. */
  readonly restate: (prior: Json) => Option.Option<string>
}

interface Composed extends Instructions<unknown> {
  readonly sources: ReadonlyArray<Source>
}

const proto = {
  [TypeId]: { _R: (_: never) => _ },
  pipe(this: unknown) {
    // biome-ignore lint/complexity/noArguments: Effect's pipeArguments takes the call's IArguments
    return pipeArguments(this, arguments)
  }
}

const compose = <R>(sources: ReadonlyArray<Source>): Instructions<R> => {
  const seen = new Set<Key>()
  for (const source of sources) {
    if (seen.has(source.key)) {
      throw new DuplicateKey({ key: source.key, message: `Duplicate instruction source key ${source.key}` })
    }
    seen.add(source.key)
  }
  const self = Object.create(proto) as { -readonly [K in keyof Composed]: Composed[K] }
  self.sources = sources
  self.keys = sources.map((source) => source.key)
  return self as Composed as unknown as Instructions<R>
}

const sourcesOf = (instructions: Instructions<unknown>): ReadonlyArray<Source> => (instructions as Composed).sources

/** Instructions composed from no sources. Its baseline is the empty text. */
export const empty: Instructions<never> = compose<never>([])

const removalText = <A>(removed: Spec<A, unknown, unknown>["removed"], value: A): string | undefined => {
  const text = typeof removed === "function" ? removed(value) : removed
  return text === undefined || text === "" ? undefined : text
}

/**
 * Defines one Instruction Source. Throws {@link InvalidKey} (a defect) for a malformed key.
 *
 * "Changed" is decided by `Schema.equivalence(codec)` between the loaded value and the stored value
 * decoded with the codec. Rendering happens when the source is observed, so renderers must be pure
 * and cheap.
 */
export const make = <A, I, R = never>(spec: Spec<A, I, R>): Instructions<R> => {
  const sourceKey = key(spec.key)
  const equivalent = Schema.equivalence(spec.codec)
  const encode = Schema.encodeEither(spec.codec)
  const decode = Schema.decodeUnknownEither(spec.codec)

  const toJson = (value: A): Json => {
    const encoded = encode(value)
    if (Either.isLeft(encoded)) {
      throw new Error(`Instruction source ${sourceKey} loaded a value its codec cannot encode: ${encoded.left.message}`)
    }
    if (!isJson(encoded.right)) throw new Error(`Instruction source ${sourceKey} codec does not encode to JSON`)
    return encoded.right
  }

  const loaded = (value: A): Observed => {
    const removal = removalText(spec.removed, value)
    return {
      _tag: "Loaded",
      entry:
        removal === undefined
          ? { key: sourceKey, value: toJson(value) }
          : { key: sourceKey, value: toJson(value), removal },
      baseline: spec.baseline(value),
      against: (prior) => {
        const previous = decode(prior)
        if (Either.isLeft(previous)) return { _tag: "Undecodable" }
        if (equivalent(previous.right, value)) return { _tag: "Equivalent" }
        return { _tag: "Changed", text: spec.update(value, previous.right) }
      }
    }
  }

  const source: Source = {
    key: sourceKey,
    immediate: spec.immediate === true,
    // Effect.sync: a throwing renderer or codec is a defect, not an expected failure.
    observe: Effect.flatMap(spec.load, (observation) =>
      Effect.sync((): Observed => {
        if (isUnavailable(observation)) return { _tag: "Unavailable" }
        if (isAbsent(observation)) return { _tag: "Absent" }
        return loaded(observation as A)
      })
    ),
    restate: (prior) => Option.map(Either.getRight(decode(prior)), (value) => spec.baseline(value))
  }
  return compose<R>([source])
}

/**
 * Composes Instructions in caller order (nested compositions are flattened in place). Throws
 * {@link DuplicateKey} (a defect) when two sources share a key.
 */
export const combine = <const T extends ReadonlyArray<Instructions<any>>>(
  ...instructions: T
): Instructions<Context<T[number]>> => compose<Context<T[number]>>(instructions.flatMap((item) => sourcesOf(item)))

// ---------------------------------------------------------------------------------------------------
// Results

/** The separator between the renderings joined into one baseline or update text. */
export const separator = "\n\n"

const join = (texts: ReadonlyArray<string>): string => texts.filter((text) => text !== "").join(separator)

/** A complete Instruction Baseline: the exact joined `text` and the {@link Applied} it told. */
export interface Complete {
  readonly _tag: "Complete"
  readonly text: string
  readonly applied: Applied
}

/** No complete baseline can be rendered: these sources (declared order) are unavailable. */
export interface Blocked {
  readonly _tag: "Blocked"
  readonly unavailable: ReadonlyArray<Key>
}

export type Baseline = Complete | Blocked

/** Nothing to tell the model and nothing to record. */
export interface Unchanged {
  readonly _tag: "Unchanged"
}

/**
 * One combined Instruction Update: `text` to publish and the `applied` record that advances with it.
 * `text` is `""` only when every change is silent (a new source whose baseline renders empty, an
 * update rendering empty, a vanished source with no removal text); then record `applied` without
 * publishing a message.
 */
export interface Updated {
  readonly _tag: "Updated"
  readonly text: string
  readonly applied: Applied
}

export type Reconciled = Unchanged | Updated

// ---------------------------------------------------------------------------------------------------
// Operations

/**
 * Observes every source once, pairing each with its observation in declared order. The sources that
 * may wait load concurrently, each in a fiber of its own when there are several, and are joined in
 * declared order; the immediate ones are observed in this fiber meanwhile. A defect in one is reported
 * when it is joined (once the sources declared before it have loaded), and interrupts those still
 * loading; so does interrupting the observation.
 */
const observeAll = (instructions: Instructions<unknown>) => {
  const sources = sourcesOf(instructions)
  const pair = (observed: ReadonlyArray<Observed>) =>
    sources.map((source, index) => ({ source, observed: observed[index]! }))
  const waiting = sources.filter((source) => !source.immediate)
  if (waiting.length < 2)
    return Effect.map(
      Effect.forEach(sources, (source) => source.observe),
      pair
    )
  // Effect.forEach with unbounded concurrency would cost about twice these forks and joins.
  return Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forEach(waiting, (source) => Effect.fork(restore(source.observe))),
      (fibers) => {
        const forked = new Map(waiting.map((source, index) => [source, fibers[index]!]))
        return restore(
          Effect.forEach(sources, (source) => {
            const fiber = forked.get(source)
            return fiber === undefined ? source.observe : Fiber.join(fiber)
          })
        ).pipe(
          Effect.onError(() => Fiber.interruptAll(fibers)),
          Effect.map(pair)
        )
      }
    )
  )
}

const sameSources = (before: Applied, after: ReadonlyArray<AppliedSource>): boolean => {
  if (before.sources.length !== after.length) return false
  const byKey = new Map(before.sources.map((entry) => [entry.key, entry]))
  return after.every((entry) => byKey.get(entry.key) === entry)
}

const initializeErased = Traced.fn("Instructions.initialize")(function* (instructions: Instructions<unknown>) {
  const observations = yield* observeAll(instructions)
  const blocked = observations.filter(({ observed }) => observed._tag === "Unavailable").map(({ source }) => source.key)
  if (blocked.length > 0) {
    yield* Effect.logDebug("instruction baseline blocked").pipe(
      Effect.annotateLogs("instructions.unavailable", blocked)
    )
    return { _tag: "Blocked", unavailable: blocked } satisfies Blocked as Baseline
  }
  const texts: Array<string> = []
  const sources: Array<AppliedSource> = []
  for (const { observed } of observations) {
    if (observed._tag !== "Loaded") continue
    texts.push(observed.baseline)
    sources.push(observed.entry)
  }
  return { _tag: "Complete", text: join(texts), applied: { sources } } satisfies Complete as Baseline
})

/**
 * Observes every source once (concurrently) and renders the complete Instruction Baseline: the
 * non-empty baseline renderings joined with {@link separator} in declared order, and the Applied
 * record of every loaded source (including those rendering empty). Absent sources are skipped. If any
 * source is unavailable the result is `Blocked` with those keys: an incomplete baseline is never
 * produced. Idempotent for unchanged sources; interruption leaves nothing behind.
 */
export const initialize = <R>(instructions: Instructions<R>): Effect.Effect<Baseline, never, R> =>
  // The composed sources carry their requirements only in the phantom `R`; the cast restores it.
  initializeErased(instructions) as Effect.Effect<Baseline, never, R>

const reconcileErased = Traced.fn("Instructions.reconcile")(function* (
  instructions: Instructions<unknown>,
  applied: Applied
) {
  const observations = yield* observeAll(instructions)
  const prior = new Map(applied.sources.map((entry) => [entry.key, entry]))
  const composed = new Set(instructions.keys)

  // Sources no longer composed retract first, in their prior Applied order; then the composed sources
  // speak in declared order, so the newest effective state reads last.
  const texts: Array<string> = applied.sources
    .filter((entry) => !composed.has(entry.key))
    .flatMap((entry) => (entry.removal === undefined ? [] : [entry.removal]))
  const next: Array<AppliedSource> = []

  for (const { source, observed } of observations) {
    const before = prior.get(source.key)
    switch (observed._tag) {
      case "Unavailable": {
        // Stale-while-revalidate: the model keeps believing what it was last told.
        if (before !== undefined) next.push(before)
        break
      }
      case "Absent": {
        if (before?.removal !== undefined) texts.push(before.removal)
        break
      }
      case "Loaded": {
        if (before === undefined) {
          texts.push(observed.baseline)
          next.push(observed.entry)
          break
        }
        const comparison = observed.against(before.value)
        switch (comparison._tag) {
          case "Equivalent":
            next.push(before)
            break
          case "Changed":
            texts.push(comparison.text)
            next.push(observed.entry)
            break
          case "Undecodable":
            // We cannot know what the model believes in terms of today's codec: restate it fully.
            texts.push(observed.baseline)
            next.push(observed.entry)
            break
        }
        break
      }
    }
  }

  const text = join(texts)
  if (text === "" && sameSources(applied, next)) return { _tag: "Unchanged" } satisfies Unchanged as Reconciled
  return { _tag: "Updated", text, applied: { sources: next } } satisfies Updated as Reconciled
})

/**
 * Observes every source once (concurrently) and compares it with `applied`; never touches the
 * baseline. Per source, in declared order:
 * - unavailable → its Applied entry is kept and nothing is said;
 * - absent → its pre-rendered removal text, if any; it leaves Applied;
 * - loaded, not in Applied → its baseline rendering (once: it is then recorded);
 * - loaded, equivalent to the decoded Applied value → nothing; the Applied entry is kept as stored;
 * - loaded, changed → its update rendering (only the newly effective state);
 * - loaded, Applied value no longer decodes → its baseline rendering again.
 * Applied keys that are no longer composed leave Applied, their removal text (if any) coming first in
 * prior Applied order. All texts join into one update with {@link separator}. `Unchanged` when there is
 * nothing to say and nothing to record; reconciling again with the returned `applied` and the same
 * source values is `Unchanged` (idempotent).
 */
export const reconcile = <R>(instructions: Instructions<R>, applied: Applied): Effect.Effect<Reconciled, never, R> =>
  reconcileErased(instructions, applied) as Effect.Effect<Reconciled, never, R>

const rebaselineErased = Traced.fn("Instructions.rebaseline")(function* (
  instructions: Instructions<unknown>,
  applied: Applied
) {
  const observations = yield* observeAll(instructions)
  const prior = new Map(applied.sources.map((entry) => [entry.key, entry]))
  const texts: Array<string> = []
  const sources: Array<AppliedSource> = []
  const blocked: Array<Key> = []
  for (const { source, observed } of observations) {
    switch (observed._tag) {
      case "Loaded": {
        texts.push(observed.baseline)
        sources.push(observed.entry)
        break
      }
      case "Absent":
        break
      case "Unavailable": {
        const before = prior.get(source.key)
        const restated = before === undefined ? Option.none() : source.restate(before.value)
        if (before === undefined || Option.isNone(restated)) {
          blocked.push(source.key)
        } else {
          texts.push(restated.value)
          sources.push(before)
        }
        break
      }
    }
  }
  if (blocked.length > 0) {
    yield* Effect.logDebug("instruction rebaseline blocked").pipe(
      Effect.annotateLogs("instructions.unavailable", blocked)
    )
    return { _tag: "Blocked", unavailable: blocked } satisfies Blocked as Baseline
  }
  return { _tag: "Complete", text: join(texts), applied: { sources } } satisfies Complete as Baseline
})

/**
 * Renders a fresh baseline after a completed compaction, observing every source once. Like
 * {@link initialize}, except that an unavailable source is restated from its Applied value (decoded
 * with its codec, rendered with `baseline`, Applied entry kept as stored). An unavailable source with
 * no Applied value, or one that no longer decodes, blocks: the result is `Blocked` with those keys.
 * Applied keys no longer composed are dropped silently: the fresh baseline no longer mentions them.
 */
export const rebaseline = <R>(instructions: Instructions<R>, applied: Applied): Effect.Effect<Baseline, never, R> =>
  rebaselineErased(instructions, applied) as Effect.Effect<Baseline, never, R>
