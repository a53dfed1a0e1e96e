export * as SessionRunner from "./session-runner.js"

import type { Errors, Location, Model } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { Config } from "../config/config.js"
import { SessionInput } from "../input/session-input.js"
import { InstructionCheckpoint } from "../instructions/instruction-checkpoint.js"
import { McpGuidance } from "../instructions/mcp-guidance.js"
import { SessionInstructions } from "../instructions/session-instructions.js"
import type { Retry } from "../llm/retry.js"
import { Locations } from "../location/locations.js"
import { McpServers } from "../mcp/mcp-servers.js"
import { Permission } from "../permission/permission.js"
import { PermissionRequests } from "../permission/permission-requests.js"
import { QuestionRequests } from "../question/question-requests.js"
import { References } from "../reference/references.js"
import { KnownSessions } from "../session/known-sessions.js"
import { SessionHistory } from "../session/session-history.js"
import { Sessions } from "../session/sessions.js"
import { Skills } from "../skill/skills.js"
import { ToolRegistry } from "../tool/tool-registry.js"
import { ModelContext } from "./model-context.js"
import { Recovery } from "./recovery.js"
import { SessionCoordinator } from "./session-coordinator.js"
import { SessionLeases } from "./session-leases.js"
import { StepRunner } from "./step-runner.js"

/**
 * Session execution: one process-local drain per session (see {@link SessionCoordinator}), each
 * running Steps until nothing continues.
 *
 * Every Step starts at a Safe Step Boundary, in this order:
 *   1. prepare instructions (InstructionCheckpoint.prepare): a blocked first baseline stops the drain
 *      and leaves pending input untouched;
 *   2. promote input: every pending steer; when the run would otherwise go idle, also one queued
 *      prompt (then continuation is re-evaluated before another is promoted). Promoting anything
 *      resets the agent's step allowance, once per boundary;
 *   3. sample the session's agent and model, build the Model Context, run the Step.
 * A Step that called tools continues the drain; one that finished without tools lets the next
 * boundary decide (a steer or a queued prompt may keep it going); a failed Step ends it.
 *
 * A drain runs only while this host holds the session's lease (see {@link SessionLeases}), so hosts
 * in several processes over one database never run one session twice. `active` lists this host's
 * drains only; `wait` and `interrupt` also reach a session another host runs.
 *
 * Building the layer first runs {@link Recovery} (what a crash left running is failed explicitly,
 * except in sessions another live host holds) and wakes every session that still has admitted
 * input or whose drain stopped between Steps with more to do (continued without new input, unless
 * the session was interrupted since); then, at every heartbeat, it takes over the sessions of hosts
 * that have stopped since.
 */
export interface Interface {
  /** Advisory: starts (or coalesces into) the session's drain; resolves immediately. */
  readonly wake: (sessionID: string) => Effect.Effect<void>
  /**
   * Interrupts the session's running Step (provider stream and tools; partial output is kept).
   * Resolves once the Step has settled and the session's pending permission and question requests
   * are rejected. When another live host runs the session, that host is asked to (it looks every
   * 250 ms) and this resolves once it has let the session go.
   * Idempotent; fails only for an unknown session.
   */
  readonly interrupt: (sessionID: string) => Effect.Effect<void, Errors.SessionNotFoundError>
  /**
   * Resolves when the session is idle: no drain of it runs here, and no other live host holds it
   * (that is watched every 100 ms). Fails only for an unknown session.
   */
  readonly wait: (sessionID: string) => Effect.Effect<void, Errors.SessionNotFoundError>
  /** The foreground drain registry of this process: running sessions → `{type: "running"}`. */
  readonly active: Effect.Effect<Readonly<Record<string, { readonly type: "running" }>>>
}

export class Service extends Context.Tag("@opencode-ai/core/SessionRunner")<Service, Interface>() {}

export interface Options {
  /** The provider retry policy; default `Retry.defaultPolicy`. */
  readonly retry?: Retry.Policy
  /** Run {@link Recovery} and resume pending sessions when the layer is built; default true. */
  readonly recover?: boolean
}

export const layer = (options: Options = {}) =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const locations = yield* Locations.Service
      const config = yield* Config.Service
      const checkpoint = yield* InstructionCheckpoint.Service
      const composer = yield* SessionInstructions.Service
      const input = yield* SessionInput.Service
      const history = yield* SessionHistory.Service
      const registry = yield* ToolRegistry.Service
      const mcpServers = yield* McpServers.Service
      const skills = yield* Skills.Service
      const references = yield* References.Service
      const permissions = yield* PermissionRequests.Service
      const questions = yield* QuestionRequests.Service
      const leases = yield* SessionLeases.Service
      const known = yield* KnownSessions.Service
      const context = yield* Effect.context<StepRunner.Requirements | Recovery.Requirements>()

      const selectAgent = (name: string | undefined) =>
        Option.orElse(config.agent(name ?? config.defaultAgent), () => config.agent(config.defaultAgent))

      /**
       * Steps until nothing continues. Ends `idle` when it found no input to promote, `stopped` when
       * something else ended it (a failed Step, blocked instructions, no usable model). With `resume`
       * the first Step runs without new input: it continues a conversation a stopped drain left.
       */
      const steps = (sessionID: string, resume: boolean) =>
        Effect.gen(function* () {
          let continuing = resume
          let step = 1
          let waitedForMcp = false
          // Resolved once per drain, and again only if the session's Location changes (a move).
          let resolved: { readonly key: string; readonly location: Location.LocationInfo } | undefined
          while (true) {
            if (!continuing && (yield* input.pending(sessionID)).length === 0) return "idle" as const
            const before = yield* sessions.get(sessionID)
            const key = JSON.stringify(before.location)
            if (resolved?.key !== key) resolved = { key, location: yield* locations.resolve(before.location) }
            const location = resolved.location

            // 1. Safe Step Boundary: instructions first. The guidance producers: the skills the
            // session's current agent may use, and the project's references.
            const guided = selectAgent(before.agent)
            const producers = {
              references: references.guidance(location),
              ...(Option.isSome(guided) ? { agentSkills: skills.guidance(location, guided.value.permission) } : {}),
              // The instructions of the MCP servers that agent may use.
              ...(Option.isSome(guided) ? { mcp: mcpServers.guidance(guided.value.permission) } : {})
            }
            const prepared = yield* checkpoint.prepare(
              sessionID,
              yield* composer.forSession(sessionID, location, producers)
            )
            if (prepared._tag === "Blocked") {
              // MCP servers still connecting block a first baseline only until their connections
              // settle (each has a deadline, and a settled server never reports "connecting" again):
              // wait for that once, then try the boundary again rather than leave the input stranded.
              if (!waitedForMcp && prepared.unavailable.includes(McpGuidance.key)) {
                waitedForMcp = true
                yield* mcpServers.settled
                continue
              }
              yield* Effect.logWarning("instructions unavailable; the step waits", {
                unavailable: prepared.unavailable
              })
              return "stopped" as const
            }

            // 2. Promotion.
            let promoted = yield* input.promoteSteers(sessionID)
            if (!continuing && promoted === 0 && (yield* input.promoteNextQueued(sessionID))) promoted = 1
            if (!continuing && promoted === 0) return "stopped" as const
            if (promoted > 0) step = 1

            // 3. Sample agent and model now: switches admitted after this apply to the next Step.
            const session = yield* sessions.get(sessionID)
            const agent = selectAgent(session.agent)
            if (Option.isNone(agent)) return yield* Effect.dieMessage("no agent is available")
            const ref: Option.Option<Model.ModelRef> = Option.orElse(Option.fromNullable(session.model), () =>
              Option.orElse(Option.fromNullable(agent.value.model), () => config.model)
            )
            const found = Option.flatMap(ref, config.findModel)
            if (Option.isNone(found)) {
              yield* StepRunner.failBeforeOutput({
                sessionID,
                agent: agent.value,
                model: Option.getOrElse(ref, () => ({ id: "", providerID: "" })),
                message: Option.isNone(ref)
                  ? "No model is configured: set `model` in opencode.json or choose one for the session"
                  : `Unknown model ${ref.value.providerID}/${ref.value.id}`
              })
              return "stopped" as const
            }
            const lastStep = agent.value.steps !== undefined && step >= agent.value.steps
            // Tools the agent denies for every resource are not offered at all.
            const tools = yield* registry.materialize((names) => Permission.visibleTools(agent.value.permission, names))
            const request = ModelContext.build({
              sessionID,
              agent: agent.value,
              provider: found.value.provider,
              model: found.value.model,
              baseline: prepared.baseline,
              history: yield* history.context(sessionID, { baselineSeq: prepared.baselineSeq }),
              tools: tools.definitions,
              lastStep
            })
            const outcome = yield* StepRunner.run({
              sessionID,
              directory: location.directory,
              agent: agent.value,
              model: { id: found.value.model.id, providerID: found.value.provider.id },
              request,
              // At the step limit nothing may run, whatever the model still tries to call.
              tools: lastStep ? yield* registry.materialize(() => []) : tools,
              ...(options.retry !== undefined ? { retry: options.retry } : {})
            })
            step++
            if (outcome._tag !== "Ended") return "stopped" as const
            continuing = outcome.toolCalls > 0 && !lastStep
          }
        })

      /**
       * One drain: claims the session's lease, settles what a stopped holder left open, runs Steps and
       * releases the lease. When another live host holds the session, its own drain promotes this
       * input at its next Safe Step Boundary, so there is nothing to do here. A drain that went idle
       * looks at the input once more after releasing: input admitted by another host while this one
       * was finishing found the session held and was left to it. Failures end the drain; they never
       * escape it.
       */
      const drain = (sessionID: string) =>
        Effect.gen(function* () {
          // An unknown session fails here (logged below) rather than at the lease's foreign key.
          yield* known.ensure(sessionID)
          while (true) {
            const claim = yield* leases.claim(sessionID)
            if (claim._tag === "Held") return
            const ended = yield* Effect.gen(function* () {
              if (claim.from !== undefined) {
                const settled = yield* Recovery.session(sessionID)
                yield* Effect.logInfo("took over a session from a stopped host", { host: claim.from, ...settled })
              }
              // Resuming after a stopped host (found at startup, or just taken over): its conversation
              // may end where a Step should follow.
              const resume = resuming.delete(sessionID) || claim.from !== undefined
              return yield* steps(sessionID, resume && (yield* Recovery.continues(sessionID)))
            }).pipe(Effect.ensuring(leases.release(sessionID)))
            if (ended !== "idle" || (yield* input.pending(sessionID)).length === 0) return
          }
        }).pipe(
          Effect.provide(context),
          Effect.catchAll((error) => Effect.logWarning("session drain stopped", error)),
          Effect.annotateLogs({ sessionID })
        )

      // Sessions Recovery found at startup, whose next drain checks whether to continue them.
      const resuming = new Set<string>()
      const coordinator = yield* SessionCoordinator.make(drain)
      // How often `wait` and `interrupt` look at the lease of a session another host runs, and how
      // often this host looks for interrupt requests on its own leases.
      const waitPollMs = Math.min(100, leases.heartbeatMs)
      const interruptPollMs = Math.min(250, leases.heartbeatMs)

      /**
       * Interrupts this host's drain of the session, if any: the running Step's waiting calls reject
       * their own requests as they are interrupted; then the requests a client created for the
       * session are rejected too.
       */
      const interruptHere = (sessionID: string) =>
        coordinator.interrupt(sessionID).pipe(
          Effect.zipRight(permissions.rejectPending(sessionID)),
          Effect.zipRight(questions.rejectPending(sessionID)),
          // After a restart, what the session's history ended with is not continued.
          Effect.zipRight(Effect.provide(Recovery.interrupted(sessionID), context))
        )
      // Interrupts that other hosts asked this one for.
      yield* Effect.forkScoped(
        WallClock.every(
          interruptPollMs,
          Effect.flatMap(leases.interruptRequests, Effect.forEach(interruptHere, { discard: true })).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("looking for interrupt requests failed", cause))
          )
        )
      )

      if (options.recover !== false) {
        // A restart: settle what a crash left running, then resume sessions with admitted input.
        const recovered = yield* Recovery.run()
        if (recovered.stranded > 0 || recovered.requests > 0 || recovered.pending.length > 0) {
          yield* Effect.logInfo("recovered after restart", recovered)
        }
        for (const sessionID of recovered.pending) resuming.add(sessionID)
        yield* Effect.forEach(recovered.pending, coordinator.wake, { discard: true })
        // Sessions a host that stopped since still holds: a drain here claims and settles them.
        yield* Effect.forkScoped(
          WallClock.every(
            leases.heartbeatMs,
            Effect.flatMap(leases.orphaned, Effect.forEach(coordinator.wake, { discard: true })).pipe(
              Effect.catchAllCause((cause) => Effect.logWarning("looking for stopped hosts failed", cause))
            )
          )
        )
      }

      return Service.of({
        wake: coordinator.wake,
        // The running Step's waiting calls reject their own requests as they are interrupted; then the
        // requests a client created for the session are rejected too.
        interrupt: Effect.fn("SessionRunner.interrupt")(function* (sessionID: string) {
          yield* known.ensure(sessionID)
          if (!(yield* leases.heldElsewhere(sessionID))) return yield* interruptHere(sessionID)
          // Another live host runs it: ask that host (which also rejects the session's requests), and
          // resolve once it has let the session go.
          yield* leases.requestInterrupt(sessionID)
          while (yield* leases.heldElsewhere(sessionID)) yield* WallClock.sleep(waitPollMs)
        }),
        wait: Effect.fn("SessionRunner.wait")(function* (sessionID: string) {
          yield* known.ensure(sessionID)
          // Idle here is not idle everywhere: while another live host runs the session, watch its lease.
          // Input can sit unheld for an instant while a host hands it over (it releases, then claims
          // again for input admitted meanwhile), so with input pending one more look is taken.
          let unheldWithInput = false
          while (true) {
            yield* coordinator.wait(sessionID)
            if (!(yield* leases.heldElsewhere(sessionID))) {
              if (unheldWithInput || (yield* input.pending(sessionID)).length === 0) return
              unheldWithInput = true
            } else {
              unheldWithInput = false
            }
            yield* WallClock.sleep(waitPollMs)
          }
        }),
        active: Effect.map(coordinator.active, (ids) =>
          Object.fromEntries(ids.map((id) => [id, { type: "running" as const }]))
        )
      })
    })
  )
