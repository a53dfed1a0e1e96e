export * as StepSnapshots from "./step-snapshots.js"

/**
 * Step Snapshots: the file snapshots around one Step, as the Step runner records them. The snapshot
 * taken when the Step starts goes into `step.started.snapshot`; the one taken when it ends, with the
 * files that differ between the two, into `step.ended.snapshot` and `step.ended.files`. Both are taken
 * of the whole project worktree, so whatever changed it during the Step (the edit tools, `bash`, or
 * anything else) is captured. Without the Snapshots service, or when a snapshot cannot be taken, the
 * fields are left out and the Step runs as usual.
 *
 * The start snapshot is taken by {@link begin}, before the provider request goes out. (Taking it while
 * the request went out was tried: an interrupt that landed while git still ran lost the Step's
 * streamed text, since `step.started` waits for it.) A Step that ran no tool call cannot have written
 * a file itself: its end snapshot is its start snapshot, with no changed files, and no git run is
 * spent on it. A Step that continues another in the same drain (after its tool calls) starts from
 * that Step's end snapshot, taken moments before, instead of walking the worktree again: a walk costs
 * one `lstat` per file, and a tool turn of three Steps then takes three walks instead of five. What
 * changes between the two (nothing of the session's own: only another program's write in those
 * milliseconds) is then counted in the second Step's changed files.
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
  /**
   * The fields for `step.ended`. With `ranTools`, takes the end snapshot and lists the files that
   * changed since the start; without, the Step wrote nothing itself and the start snapshot is reused.
   * Never fails.
   */
  readonly end: (ranTools: boolean) => Effect.Effect<Ended>
}

const none: Around = { started: {}, end: () => Effect.succeed({}) }

/**
 * Takes the start snapshot of a Step working in `directory`, before its provider request, or starts
 * from `taken` (a snapshot of the same worktree taken moments before). Never fails.
 */
export const begin = (
  snapshots: Option.Option<Snapshots.Interface>,
  directory: string,
  taken?: string | undefined
): Effect.Effect<Around> =>
  Effect.gen(function* () {
    if (Option.isNone(snapshots)) return none
    const store = snapshots.value
    const project = yield* store.project(directory)
    if (Option.isNone(project)) return none
    const start = taken === undefined ? yield* store.track(project.value) : Option.some(taken)
    if (Option.isNone(start)) return none
    const from = start.value
    const end = (ranTools: boolean) =>
      Effect.gen(function* () {
        if (!ranTools) return { snapshot: from, files: [] }
        const taken = yield* store.track(project.value)
        if (Option.isNone(taken)) return {}
        const files = yield* store
          .changed(project.value, from, taken.value)
          .pipe(
            Effect.catchAll((error) => Effect.as(Effect.logWarning("could not list a Step's changed files", error), []))
          )
        return { snapshot: taken.value, files }
      })
    return { started: { snapshot: from }, end }
  })
