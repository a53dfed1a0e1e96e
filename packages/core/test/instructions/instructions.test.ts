import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Schema } from "effect"
import * as fc from "fast-check"
import { DateSource } from "../../src/instructions/date-source.js"
import { EnvironmentSource } from "../../src/instructions/environment-source.js"
import { InstructionDiscovery } from "../../src/instructions/instruction-discovery.js"
import { InstructionEntry } from "../../src/instructions/instruction-entry.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { McpGuidance } from "../../src/instructions/mcp-guidance.js"
import { ReferenceGuidance } from "../../src/instructions/reference-guidance.js"
import { SkillGuidance } from "../../src/instructions/skill-guidance.js"

// ---------------------------------------------------------------------------------------------------
// Test sources: a mutable cell per source, renderings that are machine-checkable
//   baseline "key=value", update "key:=value", removal "key!"

interface Cell<A> {
  value: Instructions.Observation<A>
  loads: number
}

const cell = <A>(value: Instructions.Observation<A>): Cell<A> => ({ value, loads: 0 })

const numberSource = (key: string, state: Cell<number>, options: { readonly removable?: boolean } = {}) =>
  Instructions.make({
    key,
    codec: Schema.Number,
    load: Effect.sync(() => {
      state.loads++
      return state.value
    }),
    baseline: (value) => `${key}=${value}`,
    update: (value) => `${key}:=${value}`,
    ...(options.removable === true ? { removed: `${key}!` } : {})
  })

/** A source of text that renders as the text itself, loaded with `load`. */
const textSource = (key: string, load: Effect.Effect<Instructions.Observation<string>>) =>
  Instructions.make({ key, codec: Schema.String, load, baseline: (value) => value, update: (value) => value })

const complete = (baseline: Instructions.Baseline): Instructions.Complete => {
  assert.strictEqual(baseline._tag, "Complete")
  return baseline as Instructions.Complete
}

const updated = (reconciled: Instructions.Reconciled): Instructions.Updated => {
  assert.strictEqual(reconciled._tag, "Updated")
  return reconciled as Instructions.Updated
}

/** chai's `assert.throws` takes no predicate. */
const throwsWith = (f: () => unknown, predicate: (error: unknown) => boolean) => {
  try {
    f()
  } catch (error) {
    assert.isTrue(predicate(error), String(error))
    return
  }
  assert.fail("expected a throw")
}

const keys = (...input: ReadonlyArray<string>): ReadonlyArray<Instructions.Key> => input.map(Instructions.key)

const entry = (key: string, value: Instructions.Json, removal?: string): Instructions.AppliedSource =>
  removal === undefined ? { key: Instructions.key(key), value } : { key: Instructions.key(key), value, removal }

// ---------------------------------------------------------------------------------------------------

describe("Instruction Source keys", () => {
  it("Instruction Source: represented by a stable namespaced key; malformed keys are defects", () => {
    for (const good of ["core/environment", "api/style", "core/date", "mcp/server.a/x_y-z", "a/b"]) {
      assert.isTrue(Instructions.isKey(good), good)
    }
    for (const bad of ["", "core", "Core/env", "core/", "/env", "core//env", "core/-env", "api/a b", "api/é"]) {
      assert.isFalse(Instructions.isKey(bad), bad)
      throwsWith(
        () => numberSource(bad, cell(1)),
        (error: unknown) => error instanceof Instructions.InvalidKey && error.key === bad
      )
    }
  })

  it.effect("a malformed key thrown inside an Effect is a defect", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Effect.sync(() => numberSource("nope", cell(1))))
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Die")
    })
  )
})

describe("Relationships", () => {
  it.effect("Instructions is an opaque carrier composed from zero or more Instruction Sources.", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(Instructions.empty.keys, [])
      assert.deepStrictEqual(yield* Instructions.initialize(Instructions.empty), {
        _tag: "Complete",
        text: "",
        applied: Instructions.emptyApplied
      })
      assert.deepStrictEqual(yield* Instructions.reconcile(Instructions.empty, Instructions.emptyApplied), {
        _tag: "Unchanged"
      })
      assert.deepStrictEqual(Instructions.combine().keys, [])

      const a = numberSource("t/a", cell(1))
      const b = numberSource("t/b", cell(2))
      const nested = Instructions.combine(Instructions.empty, a, Instructions.combine(Instructions.empty, b))
      assert.deepStrictEqual(nested.keys, keys("t/a", "t/b"))
      assert.strictEqual(complete(yield* Instructions.initialize(nested)).text, "t/a=1\n\nt/b=2")
    })
  )

  it.effect(
    "The runner explicitly loads and combines instruction built-ins, InstructionDiscovery, selected-agent skill guidance, reference guidance, MCP guidance, and InstructionEntry values. There is no instruction registry.",
    () =>
      Effect.gen(function* () {
        // Producers are loaded concurrently; their Instructions are then combined in a fixed order.
        const [entries, skills] = yield* Effect.all(
          [
            Effect.succeed(
              InstructionEntry.instructions([
                { name: Schema.decodeSync(InstructionEntry.Name)("style"), value: "Be terse." }
              ])
            ),
            Effect.succeed(SkillGuidance.make(Effect.succeed([{ name: "pdf", description: "PDFs" }])))
          ],
          { concurrency: "unbounded" }
        )
        const instructions = Instructions.combine(
          EnvironmentSource.make(Effect.succeed({ directory: "/w", root: "/w", git: true, platform: "linux" })),
          DateSource.instructions,
          InstructionDiscovery.make(Effect.succeed([{ path: "/w/AGENTS.md", content: "Use pnpm." }])),
          ReferenceGuidance.make(Effect.succeed([{ name: "lib", path: "/lib", description: "Library" }])),
          McpGuidance.make(Effect.succeed([{ name: "docs", instructions: "Search first." }])),
          skills,
          entries
        )
        assert.deepStrictEqual(
          instructions.keys,
          keys(
            "core/environment",
            "core/date",
            "core/instruction-discovery",
            "core/references",
            "mcp/instructions",
            "agent/skills",
            "api/style"
          )
        )
        const baseline = complete(yield* Instructions.initialize(instructions))
        const positions = [
          "<env>",
          "Current date",
          "/w/AGENTS.md",
          "<available_references>",
          "<mcp_instructions>",
          "<available_skills>",
          "<context"
        ].map((marker) => baseline.text.indexOf(marker))
        assert.isTrue(
          positions.every((position, index) => position >= 0 && (index === 0 || position > positions[index - 1]!)),
          String(positions)
        )
      })
  )

  describe("Instructions.combine(...) preserves caller order and rejects duplicate stable namespaced source keys. The runner loads its producers concurrently, then combines them in its fixed declared order.", () => {
    it.effect("preserves caller order in the baseline text and Applied", () =>
      Effect.gen(function* () {
        const a = numberSource("t/a", cell(1))
        const b = numberSource("t/b", cell(2))
        const baseline = complete(yield* Instructions.initialize(Instructions.combine(b, a)))
        assert.strictEqual(baseline.text, "t/b=2\n\nt/a=1")
        assert.deepStrictEqual(
          baseline.applied.sources.map((source) => source.key),
          ["t/b", "t/a"]
        )
      })
    )

    it.effect("rejects duplicate keys, as a defect", () =>
      Effect.gen(function* () {
        const a = numberSource("t/a", cell(1))
        const again = numberSource("t/a", cell(2))
        throwsWith(
          () => Instructions.combine(a, numberSource("t/b", cell(0)), again),
          (error: unknown) => error instanceof Instructions.DuplicateKey && error.key === "t/a"
        )
        assert.throws(() => Instructions.combine(Instructions.combine(a), Instructions.combine(a)))
        const exit = yield* Effect.exit(Effect.sync(() => Instructions.combine(a, again)))
        assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Die")
      })
    )

    it.effect("observes sources concurrently and still orders text by declaration, not completion", () =>
      Effect.gen(function* () {
        // `first` cannot finish until `second` has started: a sequential observation would deadlock.
        const secondStarted = yield* Deferred.make<void>()
        const first = Instructions.make({
          key: "t/first",
          codec: Schema.String,
          load: Effect.as(Deferred.await(secondStarted), "one"),
          baseline: (value) => `first=${value}`,
          update: (value) => `first:=${value}`
        })
        const second = Instructions.make({
          key: "t/second",
          codec: Schema.String,
          load: Effect.as(Deferred.succeed(secondStarted, undefined), "two"),
          baseline: (value) => `second=${value}`,
          update: (value) => `second:=${value}`
        })
        const fiber = yield* Effect.fork(Instructions.initialize(Instructions.combine(first, second)))
        const baseline = complete(yield* Fiber.join(fiber))
        assert.strictEqual(baseline.text, "first=one\n\nsecond=two")
      })
    )

    /** A source whose value is the id of the fiber that loaded it. */
    const loadedBy = (name: string, immediate: boolean) =>
      Instructions.make({
        key: `t/${name}`,
        codec: Schema.String,
        load: Effect.map(Effect.fiberId, (id) => `${id._tag === "Runtime" ? id.id : "none"}`),
        baseline: (value) => `${name}=${value}`,
        update: (value) => `${name}:=${value}`,
        immediate
      })

    it.effect("an immediate source is observed in the caller's fiber, the others each in a fiber of their own", () =>
      Effect.gen(function* () {
        const caller = yield* Effect.fiberId
        const here = `${caller._tag === "Runtime" ? caller.id : "none"}`
        const baseline = complete(
          yield* Instructions.initialize(
            Instructions.combine(loadedBy("a", false), loadedBy("now", true), loadedBy("b", false))
          )
        )
        const [a, now, b] = baseline.text.split("\n\n").map((line) => line.split("=")[1])
        assert.strictEqual(now, here)
        assert.notStrictEqual(a, here)
        assert.notStrictEqual(b, here)
        assert.notStrictEqual(a, b)
        // A single source that may wait has nothing to run beside: it is observed here too.
        const alone = complete(
          yield* Instructions.initialize(Instructions.combine(loadedBy("a", false), loadedBy("now", true)))
        )
        assert.strictEqual(alone.text, `a=${here}\n\nnow=${here}`)
      })
    )

    it.effect(
      "a defect fails the observation once the sources before it loaded, and interrupts those still loading; so does interrupting it",
      () =>
        Effect.gen(function* () {
          const interrupted: Array<string> = []
          const waiting = (name: string) =>
            textSource(
              `t/${name}`,
              Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => interrupted.push(name))))
            )
          const broken = textSource("t/broken", Effect.dieMessage("broken loader"))
          const loaded = textSource("t/loaded", Effect.as(Effect.yieldNow(), "value"))
          const exit = yield* Effect.exit(
            Instructions.initialize(Instructions.combine(loaded, broken, waiting("w1"), waiting("w2")))
          )
          assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
          assert.deepStrictEqual(interrupted.sort(), ["w1", "w2"])

          interrupted.length = 0
          const fiber = yield* Effect.fork(Instructions.initialize(Instructions.combine(waiting("w1"), waiting("w2"))))
          yield* Effect.yieldNow()
          yield* Fiber.interrupt(fiber)
          assert.deepStrictEqual(interrupted.sort(), ["w1", "w2"])
        })
    )
  })

  describe("Each Instruction Source loader returns one coherent typed value or explicitly reports unavailability. Instructions.make(...) hides the value type so differently typed sources compose uniformly; its codec compares and stores the value, while pure renderers produce baseline, update, and optional removal text.", () => {
    const Env = Schema.Struct({ directory: Schema.String, git: Schema.Boolean })

    it.effect("differently typed sources compose uniformly", () =>
      Effect.gen(function* () {
        const env = Instructions.make({
          key: "t/env",
          codec: Env,
          load: Effect.succeed({ directory: "/w", git: true }),
          baseline: (value) => `env=${value.directory}|${value.git}`,
          update: (value) => `env:=${value.directory}|${value.git}`
        })
        const list = Instructions.make({
          key: "t/list",
          codec: Schema.Array(Schema.String),
          load: Effect.succeed(["x", "y"]),
          baseline: (value) => `list=${value.join(",")}`,
          update: (value) => `list:=${value.join(",")}`,
          removed: (previous) => `list had ${previous.length}`
        })
        const count = numberSource("t/count", cell(3))
        const baseline = complete(yield* Instructions.initialize(Instructions.combine(env, list, count)))
        assert.strictEqual(baseline.text, "env=/w|true\n\nlist=x,y\n\nt/count=3")
        assert.deepStrictEqual(baseline.applied.sources, [
          entry("t/env", { directory: "/w", git: true }),
          entry("t/list", ["x", "y"], "list had 2"),
          entry("t/count", 3)
        ])
      })
    )

    it.effect(
      "the codec stores the encoded value and its equivalence, not JSON text or identity, decides a change",
      () =>
        Effect.gen(function* () {
          const state = cell(1)
          const source = Instructions.make({
            key: "t/n",
            codec: Schema.NumberFromString,
            load: Effect.sync(() => state.value),
            baseline: (value) => `n=${value}`,
            update: (value) => `n:=${value}`
          })
          const baseline = complete(yield* Instructions.initialize(source))
          assert.deepStrictEqual(baseline.applied.sources, [entry("t/n", "1")])
          // A differently spelled encoding of an equivalent value is not a change.
          const respelled = { sources: [entry("t/n", "1.0")] }
          assert.deepStrictEqual(yield* Instructions.reconcile(source, respelled), { _tag: "Unchanged" })
          state.value = 2
          assert.deepStrictEqual(updated(yield* Instructions.reconcile(source, respelled)), {
            _tag: "Updated",
            text: "n:=2",
            applied: { sources: [entry("t/n", "2")] }
          })
        })
    )

    it.effect("a fresh but structurally equal value is unchanged", () =>
      Effect.gen(function* () {
        const env = Instructions.make({
          key: "t/env",
          codec: Env,
          load: Effect.sync(() => ({ directory: "/w", git: false })),
          baseline: (value) => `env=${value.directory}`,
          update: (value) => `env:=${value.directory}`
        })
        const baseline = complete(yield* Instructions.initialize(env))
        assert.deepStrictEqual(yield* Instructions.reconcile(env, baseline.applied), { _tag: "Unchanged" })
      })
    )

    it.effect("a codec that does not encode to JSON, or a throwing renderer, is a defect", () =>
      Effect.gen(function* () {
        const dates = Instructions.make({
          key: "t/date",
          codec: Schema.DateFromSelf,
          load: Effect.succeed(new Date(0)),
          baseline: () => "d",
          update: () => "d"
        })
        const notJson = yield* Effect.exit(Instructions.initialize(dates))
        assert.isTrue(Exit.isFailure(notJson) && notJson.cause._tag === "Die")

        const throwing = Instructions.make({
          key: "t/throws",
          codec: Schema.String,
          load: Effect.succeed("x"),
          baseline: () => {
            throw new Error("boom")
          },
          update: () => "x"
        })
        const thrown = yield* Effect.exit(Instructions.initialize(throwing))
        assert.isTrue(Exit.isFailure(thrown) && thrown.cause._tag === "Die")
      })
    )

    it.effect("orUnavailable turns a loader's expected failure into an explicit unavailability", () =>
      Effect.gen(function* () {
        const flaky = textSource("t/flaky", Instructions.orUnavailable(Effect.fail("offline")))
        assert.deepStrictEqual(yield* Instructions.initialize(flaky), { _tag: "Blocked", unavailable: keys("t/flaky") })
      })
    )
  })

  it.effect(
    "Instructions.initialize(...) observes composed Instructions once and produces a complete Instruction Baseline with Applied Instructions.",
    () =>
      Effect.gen(function* () {
        const a = cell(1)
        const b = cell(2)
        const quiet = cell<string>("")
        const gone = cell<number>(Instructions.absent)
        const instructions = Instructions.combine(
          numberSource("t/a", a, { removable: true }),
          textSource(
            "t/quiet",
            Effect.sync(() => {
              quiet.loads++
              return quiet.value
            })
          ),
          numberSource("t/gone", gone),
          numberSource("t/b", b)
        )
        const baseline = yield* Instructions.initialize(instructions)
        assert.deepStrictEqual([a.loads, quiet.loads, gone.loads, b.loads], [1, 1, 1, 1])
        assert.deepStrictEqual(baseline, {
          _tag: "Complete",
          // the empty rendering and the absent source add no text and no stray separators
          text: "t/a=1\n\nt/b=2",
          applied: { sources: [entry("t/a", 1, "t/a!"), entry("t/quiet", ""), entry("t/b", 2)] }
        })
      })
  )

  it.effect(
    "Instructions.reconcile(...) observes composed Instructions once and returns either unchanged or one combined chronological update. It never rewrites the baseline.",
    () =>
      Effect.gen(function* () {
        const a = cell(1)
        const b = cell(2)
        const instructions = Instructions.combine(numberSource("t/a", a), numberSource("t/b", b))
        const baseline = complete(yield* Instructions.initialize(instructions))
        const baselineText = baseline.text

        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, baseline.applied), { _tag: "Unchanged" })
        assert.deepStrictEqual([a.loads, b.loads], [2, 2])

        b.value = 3
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        assert.deepStrictEqual([a.loads, b.loads], [3, 3])
        // Only the chronological update: no baseline field, no restatement of unchanged sources.
        assert.deepStrictEqual(Object.keys(update).sort(), ["_tag", "applied", "text"])
        assert.strictEqual(update.text, "t/b:=3")
        assert.deepStrictEqual(update.applied, { sources: [entry("t/a", 1), entry("t/b", 3)] })
        assert.strictEqual(baseline.text, baselineText)

        // Idempotent: reconciling again against the advanced Applied says nothing.
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, update.applied), { _tag: "Unchanged" })
      })
  )

  describe("Instructions.rebaseline(...) renders a fresh baseline after completed compaction, recalling previously applied values for sources that are temporarily unavailable.", () => {
    it.effect("folds current values into a fresh baseline and restates unavailable sources from Applied", () =>
      Effect.gen(function* () {
        const a = cell(1)
        const b = cell(2)
        const instructions = Instructions.combine(numberSource("t/a", a), numberSource("t/b", b))
        const baseline = complete(yield* Instructions.initialize(instructions))
        a.value = 5
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        b.value = Instructions.unavailable
        const fresh = complete(yield* Instructions.rebaseline(instructions, update.applied))
        assert.strictEqual(fresh.text, "t/a=5\n\nt/b=2")
        assert.deepStrictEqual(fresh.applied, update.applied)
      })
    )

    it.effect("blocks when an unavailable source has no Applied value, or one that no longer decodes", () =>
      Effect.gen(function* () {
        const a = cell<number>(Instructions.unavailable)
        const b = cell<number>(Instructions.unavailable)
        const instructions = Instructions.combine(numberSource("t/a", a), numberSource("t/b", b))
        assert.deepStrictEqual(yield* Instructions.rebaseline(instructions, { sources: [entry("t/b", 1)] }), {
          _tag: "Blocked",
          unavailable: keys("t/a")
        })
        assert.deepStrictEqual(
          yield* Instructions.rebaseline(instructions, { sources: [entry("t/a", "not a number"), entry("t/b", 1)] }),
          { _tag: "Blocked", unavailable: keys("t/a") }
        )
      })
    )

    it.effect("drops sources no longer composed, and absent ones, without removal text", () =>
      Effect.gen(function* () {
        const a = cell<number>(Instructions.absent)
        const applied = { sources: [entry("t/old", 1, "t/old!"), entry("t/a", 2, "t/a!")] }
        const fresh = complete(yield* Instructions.rebaseline(numberSource("t/a", a, { removable: true }), applied))
        assert.deepStrictEqual(fresh, { _tag: "Complete", text: "", applied: Instructions.emptyApplied })
      })
    )
  })

  it.effect(
    "A changed Instruction Source may contribute text to one Instruction Update containing the newly effective state.",
    () =>
      Effect.gen(function* () {
        const seen: Array<[string, string]> = []
        const state = cell("monday")
        const day = Instructions.make({
          key: "t/day",
          codec: Schema.String,
          load: Effect.sync(() => state.value),
          baseline: (value) => `day=${value}`,
          update: (value, previous) => {
            seen.push([value, previous])
            return `day:=${value}`
          }
        })
        const other = numberSource("t/other", cell(1))
        const instructions = Instructions.combine(day, other)
        const baseline = complete(yield* Instructions.initialize(instructions))
        state.value = "tuesday"
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        assert.strictEqual(update.text, "day:=tuesday")
        assert.notInclude(update.text, "monday")
        assert.deepStrictEqual(seen, [["tuesday", "monday"]])
      })
  )

  describe("Applied Instructions stores one codec-encoded JSON value and, for removable sources, a pre-rendered removal message per stable Instruction Source key.", () => {
    it.effect("stores the encoded value and the removal text rendered from that value", () =>
      Effect.gen(function* () {
        const names = cell<ReadonlyArray<string>>(["a"])
        const source = Instructions.make({
          key: "t/names",
          codec: Schema.Array(Schema.String),
          load: Effect.sync(() => names.value),
          baseline: (value) => `names=${value.join(",")}`,
          update: (value) => `names:=${value.join(",")}`,
          removed: (previous) => `forget ${previous.join(",")}`
        })
        const plain = numberSource("t/plain", cell(7))
        const instructions = Instructions.combine(source, plain)
        const baseline = complete(yield* Instructions.initialize(instructions))
        assert.deepStrictEqual(baseline.applied, {
          sources: [entry("t/names", ["a"], "forget a"), entry("t/plain", 7)]
        })
        names.value = ["a", "b"]
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        assert.deepStrictEqual(update.applied.sources[0], entry("t/names", ["a", "b"], "forget a,b"))
        // The removal text survives the source itself: it is said after the source is no longer composed.
        const removed = updated(yield* Instructions.reconcile(plain, update.applied))
        assert.deepStrictEqual(removed, {
          _tag: "Updated",
          text: "forget a,b",
          applied: { sources: [entry("t/plain", 7)] }
        })
      })
    )

    it("round-trips through JSON, omits an absent removal, and rejects duplicate or malformed keys", () => {
      const codec = Schema.parseJson(Instructions.Applied)
      const applied: Instructions.Applied = {
        sources: [entry("t/a", { nested: [1, "x", null, true] }, "bye"), entry("t/b", 2)]
      }
      const json = Schema.encodeSync(codec)(applied)
      assert.strictEqual(
        json,
        `{"sources":[{"key":"t/a","value":{"nested":[1,"x",null,true]},"removal":"bye"},{"key":"t/b","value":2}]}`
      )
      assert.deepStrictEqual(Schema.decodeSync(codec)(json), applied)
      assert.throws(() => Schema.decodeSync(codec)(`{"sources":[{"key":"t/a","value":1},{"key":"t/a","value":2}]}`))
      assert.throws(() => Schema.decodeSync(codec)(`{"sources":[{"key":"nope","value":1}]}`))
    })
  })

  it.effect(
    "Changes from multiple Instruction Sources admitted at one safe boundary combine into one Instruction Update.",
    () =>
      Effect.gen(function* () {
        const a = cell(1)
        const b = cell(2)
        const c = cell(3)
        const d = cell<number>(4)
        const full = Instructions.combine(
          numberSource("t/a", a),
          numberSource("t/b", b),
          numberSource("t/c", c),
          numberSource("t/d", d, { removable: true }),
          numberSource("t/gone", cell(0), { removable: true })
        )
        const baseline = complete(yield* Instructions.initialize(full))
        // c changes, a changes, d becomes absent, a new source joins, t/gone is no longer composed.
        c.value = 30
        a.value = 10
        d.value = Instructions.absent
        const next = Instructions.combine(
          numberSource("t/new", cell(9)),
          numberSource("t/a", a),
          numberSource("t/b", b),
          numberSource("t/c", c),
          numberSource("t/d", d, { removable: true })
        )
        const update = updated(yield* Instructions.reconcile(next, baseline.applied))
        // Removals of sources no longer composed come first; then declared order.
        assert.strictEqual(
          update.text,
          ["t/gone!", "t/new=9", "t/a:=10", "t/c:=30", "t/d!"].join(Instructions.separator)
        )
        assert.deepStrictEqual(update.applied, {
          sources: [entry("t/new", 9), entry("t/a", 10), entry("t/b", 2), entry("t/c", 30)]
        })
      })
  )

  it.effect(
    "Instruction changes are sampled and admitted lazily at a Safe Step Boundary, never pushed asynchronously when their source changes.",
    () =>
      Effect.gen(function* () {
        const a = cell(1)
        const instructions = numberSource("t/a", a)
        const baseline = complete(yield* Instructions.initialize(instructions))
        for (const value of [2, 3, 4, 5]) a.value = value
        // Nothing observed the intermediate values; the next boundary says only the latest one.
        assert.strictEqual(a.loads, 1)
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        assert.strictEqual(a.loads, 2)
        assert.strictEqual(update.text, "t/a:=5")
      })
  )

  describe("The first Step renders the latest complete Instruction Baseline and creates its InstructionCheckpoint without emitting a redundant Instruction Update; an unavailable initial source blocks the Step instead of persisting an incomplete baseline.", () => {
    it.effect("a reconcile right after initialize is Unchanged", () =>
      Effect.gen(function* () {
        const instructions = Instructions.combine(numberSource("t/a", cell(1)), numberSource("t/b", cell(2)))
        const baseline = complete(yield* Instructions.initialize(instructions))
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, baseline.applied), { _tag: "Unchanged" })
      })
    )

    it.effect("an unavailable source blocks with every unavailable key, in declared order", () =>
      Effect.gen(function* () {
        const a = cell<number>(Instructions.unavailable)
        const b = cell(2)
        const c = cell<number>(Instructions.unavailable)
        const instructions = Instructions.combine(
          numberSource("t/c", c),
          numberSource("t/b", b),
          numberSource("t/a", a)
        )
        assert.deepStrictEqual(yield* Instructions.initialize(instructions), {
          _tag: "Blocked",
          unavailable: keys("t/c", "t/a")
        })
        a.value = 1
        c.value = 3
        assert.strictEqual(complete(yield* Instructions.initialize(instructions)).text, "t/c=3\n\nt/b=2\n\nt/a=1")
      })
    )
  })

  it.effect(
    "Completed compaction rebaselines the InstructionCheckpoint from current Instructions and removes earlier Instruction Updates from active projected model history while preserving durable audit history.",
    () =>
      Effect.gen(function* () {
        // Algebra part: the fresh baseline alone states everything the dropped updates had said.
        const a = cell(1)
        const b = cell(2)
        const instructions = Instructions.combine(numberSource("t/a", a), numberSource("t/b", b))
        let applied = complete(yield* Instructions.initialize(instructions)).applied
        a.value = 10
        applied = updated(yield* Instructions.reconcile(instructions, applied)).applied
        b.value = 20
        applied = updated(yield* Instructions.reconcile(instructions, applied)).applied
        const fresh = complete(yield* Instructions.rebaseline(instructions, applied))
        assert.strictEqual(fresh.text, "t/a=10\n\nt/b=20")
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, fresh.applied), { _tag: "Unchanged" })
      })
  )

  describe("A newly composed Instruction Source absent from Applied Instructions emits its baseline rendering once at the next Safe Step Boundary.", () => {
    it.effect("emits the baseline rendering once", () =>
      Effect.gen(function* () {
        const a = numberSource("t/a", cell(1))
        const baseline = complete(yield* Instructions.initialize(a))
        const grown = Instructions.combine(a, numberSource("t/b", cell(2)))
        const update = updated(yield* Instructions.reconcile(grown, baseline.applied))
        assert.strictEqual(update.text, "t/b=2")
        assert.deepStrictEqual(yield* Instructions.reconcile(grown, update.applied), { _tag: "Unchanged" })
      })
    )

    it.effect("a newly composed source that is unavailable says nothing until it is observed", () =>
      Effect.gen(function* () {
        const a = numberSource("t/a", cell(1))
        const b = cell<number>(Instructions.unavailable)
        const baseline = complete(yield* Instructions.initialize(a))
        const grown = Instructions.combine(a, numberSource("t/b", b))
        assert.deepStrictEqual(yield* Instructions.reconcile(grown, baseline.applied), { _tag: "Unchanged" })
        b.value = 2
        assert.strictEqual(updated(yield* Instructions.reconcile(grown, baseline.applied)).text, "t/b=2")
      })
    )

    it.effect("a newly composed source rendering empty is recorded silently", () =>
      Effect.gen(function* () {
        const a = numberSource("t/a", cell(1))
        const baseline = complete(yield* Instructions.initialize(a))
        const quiet = textSource("t/quiet", Effect.succeed(""))
        const update = updated(yield* Instructions.reconcile(Instructions.combine(a, quiet), baseline.applied))
        assert.deepStrictEqual(update, {
          _tag: "Updated",
          text: "",
          applied: { sources: [entry("t/a", 1), entry("t/quiet", "")] }
        })
      })
    )

    it.effect("a stored value the codec can no longer decode is re-announced with the baseline rendering", () =>
      Effect.gen(function* () {
        const a = numberSource("t/a", cell(1))
        const stale = { sources: [entry("t/a", { legacy: true })] }
        assert.deepStrictEqual(updated(yield* Instructions.reconcile(a, stale)), {
          _tag: "Updated",
          text: "t/a=1",
          applied: { sources: [entry("t/a", 1)] }
        })
      })
    )
  })

  describe("Unavailable Instruction Source uses stale-while-revalidate semantics and is distinct from a successfully loaded absence, which may emit removal text.", () => {
    it.effect("an unavailable source keeps its prior belief and emits nothing", () =>
      Effect.gen(function* () {
        const a = cell(1)
        const b = cell(2)
        const instructions = Instructions.combine(numberSource("t/a", a, { removable: true }), numberSource("t/b", b))
        const baseline = complete(yield* Instructions.initialize(instructions))
        a.value = Instructions.unavailable
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, baseline.applied), { _tag: "Unchanged" })
        b.value = 3
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        assert.strictEqual(update.text, "t/b:=3")
        assert.deepStrictEqual(update.applied.sources[0], baseline.applied.sources[0])
        // Revalidated with the same value: nothing to say. With a new value: an update.
        a.value = 1
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, update.applied), { _tag: "Unchanged" })
        a.value = 4
        assert.strictEqual(updated(yield* Instructions.reconcile(instructions, update.applied)).text, "t/a:=4")
      })
    )

    it.effect("a loaded absence emits its removal text and leaves Applied", () =>
      Effect.gen(function* () {
        const a = cell(1)
        const b = cell(2)
        const instructions = Instructions.combine(numberSource("t/a", a, { removable: true }), numberSource("t/b", b))
        const baseline = complete(yield* Instructions.initialize(instructions))
        a.value = Instructions.absent
        const update = updated(yield* Instructions.reconcile(instructions, baseline.applied))
        assert.deepStrictEqual(update, { _tag: "Updated", text: "t/a!", applied: { sources: [entry("t/b", 2)] } })
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, update.applied), { _tag: "Unchanged" })
        a.value = 5
        assert.strictEqual(updated(yield* Instructions.reconcile(instructions, update.applied)).text, "t/a=5")
      })
    )

    it.effect("an absence without removal text leaves Applied silently", () =>
      Effect.gen(function* () {
        const a = cell(1)
        const instructions = numberSource("t/a", a)
        const baseline = complete(yield* Instructions.initialize(instructions))
        a.value = Instructions.absent
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, baseline.applied), {
          _tag: "Updated",
          text: "",
          applied: Instructions.emptyApplied
        })
      })
    )
  })
})

// ---------------------------------------------------------------------------------------------------
// Property: any sequence of value changes, availability flips, additions and removals

const universe = ["p/a", "p/b", "p/c", "p/d"] as const
type PKey = (typeof universe)[number]
// p/a and p/b retract with removal text; p/c and p/d have none.
const removable = (key: PKey) => key === "p/a" || key === "p/b"

interface SourceState {
  readonly composed: boolean
  readonly available: boolean
  readonly value: number | "absent"
}
type World = Record<PKey, SourceState>

type Step =
  | { readonly _tag: "set"; readonly key: PKey; readonly value: number | "absent" }
  | { readonly _tag: "availability"; readonly key: PKey; readonly available: boolean }
  | { readonly _tag: "compose"; readonly key: PKey; readonly composed: boolean }
  | { readonly _tag: "boundary" }

const pkey = fc.constantFrom(...universe)
const pvalue = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant("absent" as const))
const sourceState = fc.record({ composed: fc.boolean(), available: fc.boolean(), value: pvalue })
const world = fc.record({ "p/a": sourceState, "p/b": sourceState, "p/c": sourceState, "p/d": sourceState })
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ _tag: fc.constant("set" as const), key: pkey, value: pvalue }),
  fc.record({ _tag: fc.constant("availability" as const), key: pkey, available: fc.boolean() }),
  fc.record({ _tag: fc.constant("compose" as const), key: pkey, composed: fc.boolean() }),
  fc.constant({ _tag: "boundary" as const })
)

const apply = (current: World, s: Step): World => {
  switch (s._tag) {
    case "set":
      return { ...current, [s.key]: { ...current[s.key], value: s.value } }
    case "availability":
      return { ...current, [s.key]: { ...current[s.key], available: s.available } }
    case "compose":
      return { ...current, [s.key]: { ...current[s.key], composed: s.composed } }
    case "boundary":
      return current
  }
}

const observe = (state: SourceState): Instructions.Observation<number> =>
  !state.available ? Instructions.unavailable : state.value === "absent" ? Instructions.absent : state.value

/** Instructions composed from `world`, in universe order. */
const instructionsOf = (current: World) =>
  Instructions.combine(
    ...universe
      .filter((k) => current[k].composed)
      .map((k) =>
        Instructions.make({
          key: k,
          codec: Schema.Number,
          load: Effect.sync(() => observe(current[k])),
          baseline: (value) => `${k}=${value}`,
          update: (value) => `${k}:=${value}`,
          ...(removable(k) ? { removed: (previous: number) => `${k}!${previous}` } : {})
        })
      )
  )

/** Reads baseline/update text back into per-key belief. */
const narrate = (belief: Map<string, number>, text: string) => {
  if (text === "") return
  for (const segment of text.split(Instructions.separator)) {
    const said = /^(p\/[a-d])(=|:=)(\d+)$/.exec(segment)
    const retracted = /^(p\/[a-d])!(\d+)$/.exec(segment)
    if (said !== null) belief.set(said[1]!, Number(said[3]))
    else if (retracted !== null) {
      assert.strictEqual(belief.get(retracted[1]!), Number(retracted[2]), `retracts what was said: ${segment}`)
      belief.delete(retracted[1]!)
    } else assert.fail(`unexpected segment ${JSON.stringify(segment)}`)
  }
}

const keysIn = (text: string) =>
  text === "" ? [] : text.split(Instructions.separator).map((segment) => /^(p\/[a-d])/.exec(segment)![1]!)

const property = (initial: World, steps: ReadonlyArray<Step>) =>
  Effect.gen(function* () {
    let current = initial
    let applied: Instructions.Applied | undefined
    const belief = new Map<string, number>()
    // The model's reference state: the last value each source reported while composed and available.
    const known = new Map<PKey, number>()
    const observed = (w: World) => {
      for (const k of universe) {
        const state = w[k]
        if (!state.composed) known.delete(k)
        else if (state.available) {
          if (state.value === "absent") known.delete(k)
          else known.set(k, state.value)
        }
      }
    }

    // Sources are observed only at boundaries: the first Step, every `boundary` step, and a last one.
    for (const s of [{ _tag: "boundary" } as const, ...steps, { _tag: "boundary" } as const]) {
      current = apply(current, s)
      if (s._tag !== "boundary") continue
      const instructions = instructionsOf(current)
      const unavailableNow = universe.filter((k) => current[k].composed && !current[k].available)
      if (applied === undefined) {
        const baseline = yield* Instructions.initialize(instructions)
        if (baseline._tag === "Blocked") {
          assert.deepStrictEqual(baseline.unavailable, keys(...unavailableNow))
          continue
        }
        assert.deepStrictEqual(unavailableNow, [])
        narrate(belief, baseline.text)
        applied = baseline.applied
      } else {
        const reconciled = yield* Instructions.reconcile(instructions, applied)
        if (reconciled._tag === "Updated") {
          // (a) unavailable sources never contribute text
          for (const k of keysIn(reconciled.text)) assert.notInclude(unavailableNow, k, reconciled.text)
          // each key speaks at most once per update
          assert.strictEqual(new Set(keysIn(reconciled.text)).size, keysIn(reconciled.text).length)
          // every segment is warranted: baselines for sources new to Applied, updates for real changes,
          // removals for sources no longer composed or now absent
          const prior = new Map(applied.sources.map((source) => [source.key as string, source.value]))
          for (const segment of reconciled.text === "" ? [] : reconciled.text.split(Instructions.separator)) {
            const [, k, form, value] = /^(p\/[a-d])(=|:=|!)(\d+)$/.exec(segment)!
            const state = current[k as PKey]
            if (form === "=") assert.isFalse(prior.has(k!), segment)
            else if (form === ":=") assert.isTrue(prior.has(k!) && prior.get(k!) !== Number(value), segment)
            else assert.isTrue(prior.has(k!) && (!state.composed || state.value === "absent"), segment)
          }
          narrate(belief, reconciled.text)
          applied = reconciled.applied
        }
      }
      observed(current)
    }
    if (applied === undefined) return

    // (b) Applied equals what initialize of the final state would produce, every source available at
    // its last-known value (sources never observed are absent).
    const reference: World = Object.fromEntries(
      universe.map((k) => {
        const value = known.get(k)
        return [k, { composed: current[k].composed, available: true, value: value ?? "absent" }]
      })
    ) as World
    const expected = yield* Instructions.initialize(instructionsOf(reference))
    assert.strictEqual(expected._tag, "Complete")
    assert.deepStrictEqual(applied, (expected as Instructions.Complete).applied)

    // (c) the narrated belief ends at each source's last available value; removable sources no longer
    // known have been retracted (non-removable ones may be stale: nothing could be said).
    for (const k of universe) {
      const value = known.get(k)
      if (value !== undefined) assert.strictEqual(belief.get(k), value, k)
      else if (removable(k)) assert.isFalse(belief.has(k), k)
    }

    // And a rebaseline now restates exactly the known belief.
    const fresh = yield* Instructions.rebaseline(instructionsOf(current), applied)
    const stranded = universe.filter((k) => current[k].composed && !current[k].available && !known.has(k))
    if (stranded.length > 0) assert.deepStrictEqual(fresh, { _tag: "Blocked", unavailable: keys(...stranded) })
    else {
      const rebelief = new Map<string, number>()
      narrate(rebelief, (fresh as Instructions.Complete).text)
      assert.deepStrictEqual(rebelief, new Map([...known].filter(([k]) => current[k].composed)))
    }
  })

describe("Property", () => {
  it.effect(
    "baseline + admitted updates narrate the final belief that initialize of the final state would; unavailable sources never emit",
    () =>
      Effect.sync(() =>
        fc.assert(
          fc.property(world, fc.array(step, { maxLength: 40 }), (initial, steps) => {
            Effect.runSync(property(initial, steps))
          }),
          { numRuns: 500 }
        )
      )
  )
})
