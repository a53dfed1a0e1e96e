export * as SessionInstructions from "./session-instructions.js"

/**
 * The runner's explicit composition of a Session's Instructions: no registry, a fixed declared
 * order. The runner hands the result to `InstructionCheckpoint.prepare` at each Safe Step Boundary:
 *
 * ```ts
 * const instructions = yield* SessionInstructions.forSession(sessionID, location, { agentSkills, references, mcp })
 * const preparation = yield* checkpoint.prepare(sessionID, instructions)
 * ```
 *
 * The only I/O needed to *compose* is reading the session's entries (their keys are the source
 * keys); everything else is a loader that the prepare observes, all sources concurrently.
 */

import * as nodeFs from "node:fs"
import * as path from "node:path"
import type { Errors, Identifier, Location } from "@opencode-ai/schema"
import { Context, Effect, Layer } from "effect"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { DateSource } from "./date-source.js"
import { EnvironmentSource } from "./environment-source.js"
import { InstructionDiscovery } from "./instruction-discovery.js"
import { InstructionEntries } from "./instruction-entries.js"
import { InstructionEntry } from "./instruction-entry.js"
import { Instructions } from "./instructions.js"
import { McpGuidance } from "./mcp-guidance.js"
import { NestedInstructions } from "./nested-instructions.js"
import { ReferenceGuidance } from "./reference-guidance.js"
import { SkillGuidance } from "./skill-guidance.js"

/**
 * The guidance producers that depend on the selected agent and on config, each a loader observed
 * once per prepare. An omitted producer is not composed (if the model was told of it, its removal
 * text follows). Loaders report `Instructions.unavailable` / `Instructions.absent` explicitly.
 */
export interface Producers<R = never> {
  /** Names and descriptions of the skills the selected agent may use; absent when it may use none. */
  readonly agentSkills?: Effect.Effect<Instructions.Observation<SkillGuidance.Value>, never, R>
  /** The configured project references that have a description. */
  readonly references?: Effect.Effect<Instructions.Observation<ReferenceGuidance.Value>, never, R>
  /** The instructions of the MCP servers usable by the selected agent. */
  readonly mcp?: Effect.Effect<Instructions.Observation<McpGuidance.Value>, never, R>
}

export interface Interface {
  /**
   * The Instructions of one Step of `sessionID` at `location`, in the fixed declared order:
   * environment, date, InstructionDiscovery, the session's nested AGENTS.md files (NestedInstructions),
   * references, MCP, skills, then the session's InstructionEntry sources (`api/<key>`, in key order). Only the entries are read here (their keys
   * decide which sources exist); every source's value, including the given producers, is observed
   * later, once and all concurrently, by the prepare that receives the result. Building it writes
   * nothing and wakes nothing. Unknown session → SessionNotFoundError.
   */
  readonly forSession: <R = never>(
    sessionID: Identifier.SessionID,
    location: Location.LocationInfo,
    producers?: Producers<R>
  ) => Effect.Effect<Instructions.Instructions<R>, Errors.SessionNotFoundError>
}

/** The runner's instruction composition; `yield* SessionInstructions.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionInstructions")<Service, Interface>() {}

export const layer: Layer.Layer<
  Service,
  never,
  InstructionDiscovery.Service | InstructionEntries.Service | NestedInstructions.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const discovery = yield* InstructionDiscovery.Service
    const entries = yield* InstructionEntries.Service
    const nested = yield* NestedInstructions.Service

    /**
     * Directory, project root, whether the root is a git worktree (`.git` dir or file), platform.
     * The check is one synchronous `stat`: an asynchronous one waits behind whatever else the event
     * loop is doing (it cost a Step about 1.5 ms under load).
     */
    const environment = (location: Location.LocationInfo) =>
      EnvironmentSource.make(
        Effect.try({
          try: (): EnvironmentSource.Value => ({
            directory: location.directory,
            root: location.project.directory,
            git:
              nodeFs.statSync(path.join(location.project.directory, ".git"), { throwIfNoEntry: false }) !== undefined,
            platform: process.platform
          }),
          catch: (error) => error
        }).pipe(Instructions.orUnavailable),
        { immediate: true }
      )

    const forSession = Traced.fn("SessionInstructions.forSession")(
      function* <R = never>(
        sessionID: Identifier.SessionID,
        location: Location.LocationInfo,
        producers: Producers<R> = {}
      ) {
        const stored = yield* entries.list(sessionID)
        return Instructions.combine(
          environment(location),
          DateSource.instructions,
          discovery.instructions(location),
          nested.instructions(sessionID, location),
          producers.references === undefined ? Instructions.empty : ReferenceGuidance.make(producers.references),
          producers.mcp === undefined ? Instructions.empty : McpGuidance.make(producers.mcp),
          producers.agentSkills === undefined ? Instructions.empty : SkillGuidance.make(producers.agentSkills),
          InstructionEntry.instructions(stored)
        ) as Instructions.Instructions<R>
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ forSession })
  })
)

/** {@link Interface.forSession} through the service in context. */
export const forSession = <R = never>(
  sessionID: Identifier.SessionID,
  location: Location.LocationInfo,
  producers?: Producers<R>
): Effect.Effect<Instructions.Instructions<R>, Errors.SessionNotFoundError, Service> =>
  Effect.flatMap(Service, (service) => service.forSession(sessionID, location, producers))
