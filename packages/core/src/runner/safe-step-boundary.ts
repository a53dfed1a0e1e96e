export * as SafeStepBoundary from "./safe-step-boundary.js"

import type { Errors, Identifier, Location } from "@opencode-ai/schema"
import { Context, Data, Effect, Layer, Option } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { SessionInput } from "../input/session-input.js"
import { InstructionCheckpoint } from "../instructions/instruction-checkpoint.js"
import type { Instructions } from "../instructions/instructions.js"
import { McpGuidance } from "../instructions/mcp-guidance.js"
import { SessionInstructions } from "../instructions/session-instructions.js"
import { McpServers } from "../mcp/mcp-servers.js"
import { Traced } from "../observability/traced.js"
import { References } from "../reference/references.js"
import { Skills } from "../skill/skills.js"

/**
 * What crossing the boundary gave:
 * - `Ready`: the instructions are prepared (`baseline` verbatim, established at `baselineSeq`) and
 *   `promoted` user inputs entered Session History (0 when nothing was promoted);
 * - `Blocked`: no complete first baseline can be rendered because these sources are unavailable;
 *   nothing was written and no input was promoted. `connecting`: an MCP server still connecting is
 *   among them; its connection settles within its deadline ({@link Interface.settled}), after which
 *   the boundary may be crossed again.
 */
export type Result = Data.TaggedEnum<{
  Ready: { readonly baseline: string; readonly baselineSeq: number; readonly promoted: number }
  Blocked: { readonly unavailable: ReadonlyArray<string>; readonly connecting: boolean }
}>

export const Result = Data.taggedEnum<Result>()

/** The boundary crossed: the instructions the Step is built with. */
export type Ready = Extract<Result, { readonly _tag: "Ready" }>

export interface Input {
  readonly sessionID: Identifier.SessionID
  /** The session's resolved Location: the Location-scoped instruction producers observe it. */
  readonly location: Location.LocationInfo
  /** The session's current agent: its skill and MCP guidance are composed (none without an agent). */
  readonly agent: Option.Option<AgentCatalog.Agent>
  /**
   * The drain must continue (the previous Step called tools, or a stopped drain is resumed): only
   * steers promote. Otherwise one queued prompt promotes too when no steer did.
   */
  readonly continuing: boolean
}

export interface Interface {
  /**
   * The Safe Step Boundary before one Step, after the previous Step's tool calls settled:
   *   0. MCP tool list changes are applied to the Tool Registry (McpServers.refresh);
   *   1. instructions first: the session's Instructions are composed (SessionInstructions, with the
   *      agent's skill and MCP guidance and the project's references) and prepared against its
   *      InstructionCheckpoint (InstructionCheckpoint.prepare: a first baseline, or one Instruction
   *      Update appended with the Applied record in ONE transaction, or nothing). A blocked first
   *      baseline ends the boundary here as `Blocked`, pending input untouched;
   *   2. Prompt Promotion: every pending steer (one transaction for all of them); then, unless
   *      `continuing`, when no steer promoted, the oldest queued prompt (its own transaction).
   * So an Instruction Update always precedes the input promoted at the same boundary in history.
   *
   * Interruption before a write leaves nothing of it behind; each write is atomic and, once started,
   * runs to completion. Unknown session → SessionNotFoundError.
   */
  readonly cross: (input: Input) => Effect.Effect<Result, Errors.SessionNotFoundError>
  /**
   * The session's Instructions as the boundary composes them (the same sources and producers), not
   * yet observed: a compaction rebaselines the InstructionCheckpoint from them. Writes nothing.
   */
  readonly instructions: (
    input: Omit<Input, "continuing">
  ) => Effect.Effect<Instructions.Instructions<never>, Errors.SessionNotFoundError>
  /** Resolves once every configured MCP server has connected or failed (see McpServers.settled). */
  readonly settled: Effect.Effect<void>
}

/** `yield* SafeStepBoundary.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SafeStepBoundary")<Service, Interface>() {}

export const layer: Layer.Layer<
  Service,
  never,
  | InstructionCheckpoint.Service
  | SessionInstructions.Service
  | SessionInput.Service
  | McpServers.Service
  | Skills.Service
  | References.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const checkpoint = yield* InstructionCheckpoint.Service
    const composer = yield* SessionInstructions.Service
    const input = yield* SessionInput.Service
    const mcpServers = yield* McpServers.Service
    const skills = yield* Skills.Service
    const references = yield* References.Service

    const instructions = Traced.fn("SafeStepBoundary.instructions")(function* ({
      sessionID,
      location,
      agent
    }: Omit<Input, "continuing">) {
      // The guidance producers: the skills the session's current agent may use, the instructions of
      // the MCP servers it may use, and the project's references.
      const producers = {
        references: references.guidance(location),
        ...(Option.isSome(agent) ? { agentSkills: skills.guidance(location, agent.value.permission) } : {}),
        ...(Option.isSome(agent) ? { mcp: mcpServers.guidance(agent.value.permission) } : {})
      }
      return yield* composer.forSession(sessionID, location, producers)
    })

    const cross = Traced.fn("SafeStepBoundary.cross")(function* ({ sessionID, location, agent, continuing }: Input) {
      // MCP tool list changes notified since the last boundary join the registry before this Step
      // samples it (StepSelection), and before the MCP guidance observes the servers.
      yield* mcpServers.refresh
      const prepared = yield* checkpoint.prepare(sessionID, yield* instructions({ sessionID, location, agent }))
      if (prepared._tag === "Blocked") {
        return Result.Blocked({
          unavailable: prepared.unavailable,
          connecting: prepared.unavailable.includes(McpGuidance.key)
        })
      }
      let promoted = yield* input.promoteSteers(sessionID)
      if (!continuing && promoted === 0 && (yield* input.promoteNextQueued(sessionID))) promoted = 1
      return Result.Ready({ baseline: prepared.baseline, baselineSeq: prepared.baselineSeq, promoted })
    })

    return Service.of({ cross, instructions, settled: mcpServers.settled })
  })
)
