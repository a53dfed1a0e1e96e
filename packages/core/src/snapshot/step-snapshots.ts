export * as StepSnapshots from "./step-snapshots.js"

/**
 * Step Snapshots: the file snapshots around one Step, as the Step runner records them. The snapshot
 * taken when the Step starts goes into `step.started.snapshot`; the one taken when it ends, with the
 * files that differ between the two, into `step.ended.snapshot` and `step.ended.files`. Both are taken
 * of the whole project worktree, so whatever changed it during the Step (the edit tools, `bash`, or
 * anything else) is captured. Without the Snapshots service, or when a snapshot cannot be taken, the
 * fields are left out and the Step runs as usual.
 */

import { Effect, Option } from "effect"
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
  /** The fields for `step.started`, taken when {@link begin} ran. */
  readonly started: Started
  /** Takes the end snapshot: the fields for `step.ended`. Never fails. */
  readonly end: Effect.Effect<Ended>
}

const none: Around = { started: {}, end: Effect.succeed({}) }

/** Takes the start snapshot of a Step working in `directory`. Never fails. */
export const begin = (snapshots: Option.Option<Snapshots.Interface>, directory: string): Effect.Effect<Around> =>
  Effect.gen(function* () {
    if (Option.isNone(snapshots)) return none
    const store = snapshots.value
    const project = yield* store.project(directory)
    if (Option.isNone(project)) return none
    const start = yield* store.track(project.value)
    if (Option.isNone(start)) return none
    const end = Effect.gen(function* () {
      const taken = yield* store.track(project.value)
      if (Option.isNone(taken)) return {}
      const files = yield* store
        .changed(project.value, start.value, taken.value)
        .pipe(
          Effect.catchAll((error) => Effect.as(Effect.logWarning("could not list a Step's changed files", error), []))
        )
      return { snapshot: taken.value, files }
    })
    return { started: { snapshot: start.value }, end }
  })
