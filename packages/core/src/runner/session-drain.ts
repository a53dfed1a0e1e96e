export * as SessionDrain from "./session-drain.js"

import type { Identifier, Location } from "@opencode-ai/schema"
import { Context, Effect, Layer } from "effect"
import { Compaction } from "../compaction/compaction.js"
import { Config } from "../config/config.js"
import { SessionInput } from "../input/session-input.js"
import { Locations } from "../location/locations.js"
import { KnownSessions } from "../session/known-sessions.js"
import { SessionTitle } from "../session/session-title.js"
import { Sessions } from "../session/sessions.js"
import { StructuredOutput } from "../structured/structured-output.js"
import { ModelContext } from "./model-context.js"
import { Recovery } from "./recovery.js"
import { SafeStepBoundary } from "./safe-step-boundary.js"
import { SessionLeases } from "./session-leases.js"
import { StepRunner } from "./step-runner.js"
import { StepSelection } from "./step-selection.js"

/**
 * Session Drain: one process-local span of a session's execution that promotes eligible input and
 * runs the Steps it requires until no immediate continuation remains. It has no durable identity and
 * leaves no transcript boundary; SessionExecution runs drains one at a time per session.
 *
 * Each Step of a drain goes through the named stages, in this order:
 *   1. {@link SafeStepBoundary}: instructions prepared, then Prompt Promotion (`Ready` or `Blocked`).
 *      A compaction a client requested (Compaction.request) runs first, at the boundary: after the
 *      previous Step's tools settled, before instructions are prepared and input is promoted (so
 *      newly promoted input stays word for word after the summary). With nothing else to do, the
 *      drain then goes idle;
 *   2. {@link StepSelection}: the session's agent, model and tools, sampled now;
 *   3. {@link ModelContext}: the Step's provider request, from Session History and the baseline.
 *      Automatic compaction (`compaction.auto`): when the request's projected input exceeds the
 *      model's usable context, the session is compacted first (with a synthetic continuation) and
 *      the Step starts over from the boundary, which sees the new baseline and history;
 *   4. {@link StepRunner}: the provider stream and the settlement of its tool calls (`step.ended`
 *      carries the Step's cost from the model's catalog pricing); a Step that settled is offered to
 *      {@link SessionTitle}, which names a new session in the background. Overflow
 *      recovery (`compaction.auto`): an overflow before any output leaves no record; the session is
 *      compacted once and the same Step makes its second Physical Attempt. An overflow on that
 *      attempt fails the Step; nothing loops.
 * A Step that called tools continues the drain (unless the agent's step allowance is spent); one that
 * finished without tools lets the next boundary decide (a steer or a queued prompt may keep it
 * going); a failed Step (a failed automatic compaction included), blocked instructions or no
 * usable model end it.
 */
export interface Interface {
  /**
   * One drain of the session: claims its lease (SessionLeases), settles what a stopped holder left
   * open (Recovery.session) when the lease was taken over, runs Steps, and releases the lease however
   * it ends. When another live host holds the session, its own drain promotes this input at its next
   * Safe Step Boundary, so there is nothing to do here. A drain that went idle looks at the input once
   * more after releasing: input admitted by another host while this one was finishing found the
   * session held and was left to it. Failures (an unknown session, a Location that no longer
   * resolves) are logged and end the drain; they never escape it. Interrupting it interrupts the
   * running Step, which settles durably first (see StepRunner.run), then releases the lease. Its
   * commits to the session are fenced by the lease: once another host took the lease over (this one
   * was frozen past its expiry), the next commit dies with `EventLog/CommitFenced`, writing nothing,
   * and the drain ends (logged as a failed drain). Answers `"elsewhere"` when it let the session go
   * with work left because the session is placed on another runner now (cluster placement: its shard
   * moved while a Step ran here); the caller then wakes the session there. That runner found the
   * session held by this one and left it.
   */
  readonly run: (sessionID: Identifier.SessionID) => Effect.Effect<"elsewhere" | undefined>
  /**
   * Marks the session as found by a startup Recovery: its next drain that claims the lease first
   * checks whether its conversation ends where a Step should follow (Recovery.continues) and, if so,
   * runs that Step without new input.
   */
  readonly resumeNext: (sessionID: Identifier.SessionID) => Effect.Effect<void>
}

/** `yield* SessionDrain.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionDrain")<Service, Interface>() {}

export const layer: Layer.Layer<
  Service,
  never,
  | Sessions.Service
  | Locations.Service
  | SessionInput.Service
  | KnownSessions.Service
  | SessionLeases.Service
  | Recovery.Service
  | SafeStepBoundary.Service
  | StepSelection.Service
  | ModelContext.Service
  | StepRunner.Service
  | Compaction.Service
  | Config.Service
  | SessionTitle.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sessions = yield* Sessions.Service
    const locations = yield* Locations.Service
    const input = yield* SessionInput.Service
    const known = yield* KnownSessions.Service
    const leases = yield* SessionLeases.Service
    const recovery = yield* Recovery.Service
    const boundary = yield* SafeStepBoundary.Service
    const selection = yield* StepSelection.Service
    const modelContext = yield* ModelContext.Service
    const stepRunner = yield* StepRunner.Service
    const compaction = yield* Compaction.Service
    const config = yield* Config.Service
    const titles = yield* SessionTitle.Service

    // Sessions Recovery found at startup, whose next drain checks whether to continue them.
    const resuming = new Set<string>()

    /**
     * Steps until nothing continues. Ends `idle` when it found no input to promote, `stopped` when
     * something else ended it (a failed Step, blocked instructions, no usable model). With `resume`
     * the first Step runs without new input: it continues a conversation a stopped drain left.
     */
    const steps = (sessionID: Identifier.SessionID, resume: boolean) =>
      Effect.gen(function* () {
        let continuing = resume
        // The Step's number since input was last promoted: the agent's step allowance counts it.
        let step = 1
        let waitedForMcp = false
        // How the current Step was compacted already: each kind runs at most once per Step.
        let compacted: "none" | "auto" | "overflow" = "none"
        // Resolved once per drain, and again only if the session's Location changes (a move).
        let resolved: { readonly key: string; readonly location: Location.LocationInfo } | undefined
        const locate = Effect.gen(function* () {
          const session = yield* sessions.get(sessionID)
          const key = JSON.stringify(session.location)
          if (resolved?.key !== key) resolved = { key, location: yield* locations.resolve(session.location) }
          return { session, location: resolved.location }
        })
        /** Records the Step as failed before it reached the provider, with `message`; the drain stops. */
        const failStep = (selected: StepSelection.Selected, message: string) =>
          Effect.as(
            stepRunner.failBeforeOutput({ sessionID, agent: selected.agent, model: selected.ref, message }),
            "stopped" as const
          )
        /** An automatic compaction before the Step goes on; a failed one fails the Step (`stopped`). */
        const compactBeforeStep = (
          selected: StepSelection.Selected,
          location: Location.LocationInfo,
          agent: string | undefined
        ) =>
          Effect.flatMap(
            compaction.run({
              sessionID,
              location,
              agent: selection.agent(agent),
              selection: selected,
              reason: "auto",
              continuation: true
            }),
            (result) => (result._tag === "Failed" ? failStep(selected, result.message) : Effect.succeed(result._tag))
          )

        // The end snapshot of the Step just settled with tool calls (see StepSnapshots), for the next
        // Step when it follows at once: anything that waits between them (a compaction, MCP servers
        // connecting) drops it, so that the next Step walks the worktree itself.
        let ended: { readonly directory: string; readonly snapshot: string } | undefined
        while (true) {
          let carried = ended
          ended = undefined
          // Its shard is being handed to another runner (cluster placement): stop at this Safe Step
          // Boundary, with nothing open; the shard's next runner resumes what is left.
          if (!leases.placedHere(sessionID)) {
            yield* Effect.logInfo("the session moves to another runner; this drain stops between Steps")
            return "moved" as const
          }
          if (yield* compaction.requested(sessionID)) {
            // A requested compaction, at this boundary; with nothing else to do the drain then ends.
            carried = undefined
            const { session, location } = yield* locate
            const selected = yield* selection.select(sessionID, step)
            if (selected._tag === "Selected") {
              yield* compaction
                .run({
                  sessionID,
                  location,
                  agent: selection.agent(session.agent),
                  selection: selected,
                  reason: "manual",
                  continuation: continuing
                })
                .pipe(Effect.ensuring(compaction.served(sessionID)))
            } else {
              yield* Effect.logWarning("compaction requested, but no model can run it", { reason: selected.message })
              yield* compaction.served(sessionID)
            }
          }
          if (!continuing && !(yield* input.hasPending(sessionID))) return "idle" as const
          const { session: before, location } = yield* locate

          // 1. Safe Step Boundary.
          const crossed = yield* boundary.cross({
            sessionID,
            location,
            agent: selection.agent(before.agent),
            continuing
          })
          if (crossed._tag === "Blocked") {
            // MCP servers still connecting block a first baseline only until their connections settle
            // (each has a deadline, and a settled server never reports "connecting" again): wait for
            // that once, then try the boundary again rather than leave the input stranded.
            if (!waitedForMcp && crossed.connecting) {
              waitedForMcp = true
              yield* boundary.settled
              continue
            }
            yield* Effect.logWarning("instructions unavailable; the step waits", { unavailable: crossed.unavailable })
            return "stopped" as const
          }
          if (!continuing && crossed.promoted === 0) return "stopped" as const
          if (crossed.promoted > 0) step = 1

          // 2. Step selection: switches admitted after this apply to the next Step.
          const selected = yield* selection.select(sessionID, step)
          if (selected._tag === "Unusable") {
            yield* stepRunner.failBeforeOutput({
              sessionID,
              agent: selected.agent,
              model: selected.model,
              message: selected.message
            })
            return "stopped" as const
          }

          // 3. Model Context, compacted first when it would not fit.
          const assembled = yield* modelContext.assemble({ sessionID, selection: selected, instructions: crossed })
          if (
            compacted === "none" &&
            config.compaction.auto &&
            assembled.usable !== undefined &&
            assembled.projected > assembled.usable
          ) {
            yield* Effect.logInfo("the next request would not fit; compacting first", {
              projected: assembled.projected,
              usable: assembled.usable
            })
            const result = yield* compactBeforeStep(selected, location, before.agent)
            if (result === "stopped") return result
            if (result === "Compacted") {
              // The same Step starts over at the boundary, with the new baseline and history.
              compacted = "auto"
              continuing = true
              continue
            }
          }

          // 4. The Step (with the Structured Output the latest prompt asks for, if any).
          const structured =
            assembled.structured === undefined
              ? undefined
              : yield* Effect.either(StructuredOutput.attempt(assembled.structured, { final: selected.lastStep }))
          if (structured?._tag === "Left") return yield* failStep(selected, structured.left)
          const outcome = yield* stepRunner.run({
            sessionID,
            directory: location.directory,
            agent: selected.agent,
            model: selected.ref,
            pricing: selected.model.cost,
            request: assembled.request,
            tools: selected.runnable,
            recoverOverflow: config.compaction.auto && compacted !== "overflow",
            structured: structured?.right,
            snapshot: carried?.directory === location.directory ? carried.snapshot : undefined
          })
          if (outcome._tag === "Overflow" && !outcome.recorded) {
            // Nothing of this Step is recorded yet: compact once, then its second Physical Attempt.
            yield* Effect.logInfo("the provider reported a context overflow; compacting", { error: outcome.message })
            const result = yield* compactBeforeStep(selected, location, before.agent)
            if (result === "stopped") return result
            // Nothing could be compacted: the overflow stands.
            if (result === "Skipped") return yield* failStep(selected, outcome.message)
            compacted = "overflow"
            continuing = true
            continue
          }
          compacted = "none"
          if (outcome._tag === "Continue" && outcome.snapshot !== undefined)
            ended = { directory: location.directory, snapshot: outcome.snapshot }
          step++
          if (outcome._tag !== "Continue" && outcome._tag !== "Stop") return "stopped" as const
          // A session's first settled Step gets it a title, off this fiber (see SessionTitle).
          // (Outside the drain's fence: the title request may settle after this drain let the lease go.)
          yield* SessionLeases.undriven(
            titles.consider({ sessionID, step: { provider: selected.provider, model: selected.model } })
          )
          continuing = outcome._tag === "Continue" && !selected.lastStep
        }
      })

    const run = (sessionID: Identifier.SessionID) =>
      Effect.gen(function* () {
        // An unknown session fails here (logged below) rather than at the lease's foreign key.
        yield* known.ensure(sessionID)
        let drained = false
        while (true) {
          const claim = yield* leases.claim(sessionID)
          if (claim._tag === "Held") {
            // Input admitted while this drain was finishing, and the session placed elsewhere by now:
            // that runner found it held by this one, so it is told (`elsewhere`).
            return drained && !leases.placedHere(sessionID) ? ("elsewhere" as const) : undefined
          }
          drained = true
          const ended = yield* Effect.gen(function* () {
            if (claim.from !== undefined) {
              yield* recovery.session(sessionID)
              // What was settled is logged by Recovery.session.
              yield* Effect.logInfo("took over a session from a stopped host", { host: claim.from })
            }
            // Resuming after a stopped host (found at startup, or just taken over): its conversation
            // may end where a Step should follow.
            const resume = resuming.delete(sessionID) || claim.from !== undefined
            return yield* steps(sessionID, resume && (yield* recovery.continues(sessionID)))
          }).pipe(
            // Every commit of this drain to its session passes the lease's fence (see SessionLeases).
            (claimed) => SessionLeases.drive(sessionID, claimed),
            Effect.ensuring(leases.release(sessionID))
          )
          // Stopped for a shard on the move that is back here already (its lock lapsed and was taken
          // again): go on here. Still away, its new runner goes on once woken.
          if (ended === "moved") {
            if (leases.placedHere(sessionID)) continue
            return "elsewhere" as const
          }
          if (ended !== "idle" || !(yield* input.hasPending(sessionID))) return undefined
        }
      }).pipe(
        Effect.catchAll((error) => Effect.as(Effect.logWarning("session drain stopped", error), undefined)),
        Effect.annotateLogs({ sessionID })
      )

    return Service.of({ run, resumeNext: (sessionID) => Effect.sync(() => void resuming.add(sessionID)) })
  })
)
