export * as StepSnapshots from "./step-snapshots.js"

/**
 * Step Snapshots: the file snapshots around one Step, as the Step runner records them. The snapshot
 * taken when the Step starts goes into `step.started.snapshot`; the one taken when it ends, with the
 * files that differ between the two, into `step.ended.snapshot` and `step.ended.files`. Both are taken
 * of the whole project worktree, so whatever changed it during the Step (the edit tools, `bash`, or
 * anything else) is captured. Without the Snapshots service, or when a snapshot cannot be taken, the
 * fields are left out and the Step runs as usual.
 *
 * The start snapshot is taken in the background from {@link begin} on, while the provider request
 * goes out; `started` waits for it. The Step runner waits for it before recording `step.started`,
 * which commits before any of the Step's tool calls can start, so the snapshot is always of the
 * worktree before the Step's tools ran. A Step that ran no tool call cannot have written a file
 * itself: its end snapshot is its start snapshot, with no changed files, and no git run is spent on it.
 */

import { Effect, Exit, Fiber, Option } from "effect"
import type { Snapshots } from "./snapshots.js"

/** The snapshot fields of `step.started`. */
export interface Started {
  readonly snapshot?: string
}

/** The snapshot fields of `step.ended`. */
export interface Ended {
  readonly snapshot?: string
  readonly files?: ReadonlyArray<string>
}

export interface Around {
  /** The fields for `step.started`: waits for the start snapshot {@link begin} set off. Never fails. */
  readonly started: Effect.Effect<Started>
  /**
   * The fields for `step.ended`. With `ranTools`, takes the end snapshot and lists the files that
   * changed since the start; without, the Step wrote nothing itself and the start snapshot is reused.
   * Never fails.
   */
  readonly end: (ranTools: boolean) => Effect.Effect<Ended>
}

const none: Around = { started: Effect.succeed({}), end: () => Effect.succeed({}) }

interface Start {
  readonly project: Snapshots.Project
  readonly snapshot: string
}

/**
 * Sets off the start snapshot of a Step working in `directory`, in a fiber of the caller's (it ends
 * with the caller's fiber). Never fails.
 */
export const begin = (snapshots: Option.Option<Snapshots.Interface>, directory: string): Effect.Effect<Around> =>
  Effect.gen(function* () {
    if (Option.isNone(snapshots)) return none
    const store = snapshots.value
    const taking = yield* Effect.fork(
      Effect.gen(function* () {
        const project = yield* store.project(directory)
        if (Option.isNone(project)) return Option.none<Start>()
        const start = yield* store.track(project.value)
        if (Option.isNone(start)) return Option.none<Start>()
        return Option.some<Start>({ project: project.value, snapshot: start.value })
      })
    )
    // An interrupted start snapshot is no snapshot.
    const start = Effect.map(Fiber.await(taking), (exit) => (Exit.isSuccess(exit) ? exit.value : Option.none<Start>()))
    const started = Effect.map(
      start,
      (taken): Started => (Option.isSome(taken) ? { snapshot: taken.value.snapshot } : {})
    )
    const end = (ranTools: boolean) =>
      Effect.flatMap(start, (taken) =>
        Effect.gen(function* () {
          if (Option.isNone(taken)) return {}
          const { project, snapshot: from } = taken.value
          if (!ranTools) return { snapshot: from, files: [] }
          const to = yield* store.track(project)
          if (Option.isNone(to)) return {}
          const files = yield* store
            .changed(project, from, to.value)
            .pipe(
              Effect.catchAll((error) =>
                Effect.as(Effect.logWarning("could not list a Step's changed files", error), [])
              )
            )
          return { snapshot: to.value, files }
        })
      )
    return { started, end }
  })
