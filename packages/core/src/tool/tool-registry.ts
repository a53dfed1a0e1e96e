export * as ToolRegistry from "./tool-registry.js"

import type { Identifier, ToolContent } from "@opencode-ai/schema"
import { Context, Effect, Layer, Order, Ref, Schema, type Scope } from "effect"

/** A request for permission to perform `action` on `resources` (paths, commands, URLs, ...). */
export interface PermissionAsk {
  /** The permission's action, e.g. `read`, `edit`, `bash`, `external_directory`. */
  readonly action: string
  /** What the action applies to; every one must be allowed. */
  readonly resources: ReadonlyArray<string>
  /** Shown to whoever answers an `ask` (e.g. the diff of an edit). */
  readonly metadata?: Readonly<Record<string, unknown>>
  /** The patterns a reply of `always` saves for the project (e.g. `git *` for a git command); default the resources. */
  readonly save?: ReadonlyArray<string>
}

/** What a tool execution knows about the call it serves. */
export interface CallContext {
  readonly sessionID: Identifier.SessionID
  readonly callID: string
  /** The assistant message that issued the call (absent where a host runs a tool outside a Step). */
  readonly messageID?: Identifier.MessageID | undefined
  /** The effective agent of the Step that issued the call; a later agent switch does not change it. */
  readonly agent: string
  /** The session's Location directory: relative paths resolve against it. */
  readonly directory: string
  /**
   * Checks the call's permission under the issuing agent's rules. Resolves when allowed (possibly
   * after a user answered an `ask`); fails with a ToolFailure the model can read when denied or rejected.
   */
  readonly ask: (request: PermissionAsk) => Effect.Effect<void, ToolFailure>
  /** Publishes the tool's latest progress (durable `tool.progress`); each report replaces the last. */
  readonly progress: (update: Result) => Effect.Effect<void>
}

/** A settled, successful tool result: what the model reads and what session consumers get. */
export interface Result {
  /** The Model Tool Output: what the model sees on replay. */
  readonly content: ReadonlyArray<ToolContent.LLMToolContent>
  /** Machine-readable output for session consumers (not sent to the model). */
  readonly structured?: Readonly<Record<string, unknown>>
  /**
   * Absolute paths of files where the tool itself kept its full output (e.g. a Managed Tool Output
   * File it wrote). They survive Model Tool Output bounding, which appends its own fallback file.
   */
  readonly outputPaths?: ReadonlyArray<string>
}

/** An expected tool failure: the model is told `message` and may try again. */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  message: Schema.String
}) {}

/** One tool the model may call. `execute` runs only after the call is durable (`tool.called`). */
export interface Tool {
  readonly name: string
  readonly description: string
  /** The JSON Schema of the input object. */
  readonly inputSchema: Readonly<Record<string, unknown>>
  readonly execute: (
    input: Readonly<Record<string, unknown>>,
    context: CallContext
  ) => Effect.Effect<Result, ToolFailure>
}

/**
 * The in-process Tool Registry seam: the runner lists the tools for a Step and runs calls through
 * it. Built-in tools, permissions and Model Tool Output bounding plug in here later.
 */
/** One call the model made, as the provider stream decoded it. */
export interface Call {
  readonly id: string
  readonly name: string
  readonly input: Readonly<Record<string, unknown>>
  /** Set when the call's argument text was not a JSON object. */
  readonly inputError?: string | undefined
}

/** The tools of one Step: what the model is offered, and how its calls run. */
export interface Materialized {
  /** The definitions offered to the model, by name; tools the rules deny outright are not among them. */
  readonly definitions: ReadonlyArray<{
    readonly name: string
    readonly description: string
    readonly inputSchema: Readonly<Record<string, unknown>>
  }>
  /**
   * Runs one call. Unknown tools (including hidden ones) and undecodable input fail with a
   * ToolFailure the model can read; otherwise the tool runs with `context`. Interruptible: the
   * caller owns the settlement (bounding and publishing it).
   */
  readonly settle: (call: Call, context: CallContext) => Effect.Effect<Result, ToolFailure>
}

export interface Interface {
  /**
   * Adds a tool for the lifetime of the caller's Scope. The last registration of a name wins; when it
   * is removed, the previous one of that name is visible again.
   */
  readonly register: (tool: Tool) => Effect.Effect<void, never, Scope.Scope>
  /**
   * The visible tools (the last registration of each name), by name in code-unit order: not the
   * locale's collation, so every host offers the model the same list in the same order.
   */
  readonly list: Effect.Effect<ReadonlyArray<Tool>>
  /** The tools of one Step under `visible`: the names a permission policy offers (see Permission.visibleTools). */
  readonly materialize: (
    visible: (names: ReadonlyArray<string>) => ReadonlyArray<string>
  ) => Effect.Effect<Materialized>
}

export class Service extends Context.Tag("@opencode-ai/core/ToolRegistry")<Service, Interface>() {}

export const make = Effect.gen(function* () {
  // Every live registration in order; a later one of a name shadows the earlier ones.
  const registrations = yield* Ref.make<ReadonlyArray<Tool>>([])
  const register = (tool: Tool) =>
    Effect.acquireRelease(
      Ref.update(registrations, (all) => [...all, tool]),
      () => Ref.update(registrations, (all) => all.filter((t) => t !== tool))
    ).pipe(Effect.asVoid)
  const list = Effect.map(Ref.get(registrations), (all) =>
    [...new Map(all.map((tool) => [tool.name, tool] as const)).values()].sort((a, b) => Order.string(a.name, b.name))
  )
  const materialize = (visible: (names: ReadonlyArray<string>) => ReadonlyArray<string>) =>
    Effect.map(list, (all): Materialized => {
      const offered = new Set(visible(all.map((tool) => tool.name)))
      const tools = new Map(all.filter((tool) => offered.has(tool.name)).map((tool) => [tool.name, tool] as const))
      return {
        definitions: [...tools.values()].map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: tool.inputSchema
        })),
        settle: (call, context) => {
          if (call.inputError !== undefined)
            return Effect.fail(new ToolFailure({ message: `Invalid tool input: ${call.inputError}` }))
          const tool = tools.get(call.name)
          if (tool === undefined) {
            return Effect.fail(
              new ToolFailure({
                message: `Unknown tool: ${call.name}. Available tools: ${[...tools.keys()].join(", ") || "none"}`
              })
            )
          }
          return tool.execute(call.input, context)
        }
      }
    })
  return Service.of({ register, list, materialize })
})

export const layer: Layer.Layer<Service> = Layer.effect(Service, make)
