export * as PlanFile from "./plan-file.js"

/**
 * Plan File: the one markdown file a session's plan agent writes its plan to under experimental plan
 * mode (`OPENCODE_EXPERIMENTAL_PLAN_MODE`). Its path is decided as upstream's `Session.plan` does:
 *
 * - the session's project is a git worktree (a `.git` directory or file at the Location's project
 *   root): `<project root>/.opencode/plans/<created>-<session id>.md`, next to the code, so it can be
 *   reviewed and committed with it;
 * - otherwise: `<data dir>/plans/<created>-<session id>.md`.
 *
 * `<created>` is the session's creation time in milliseconds. Upstream names the file after the
 * session's slug; sessions here have none, so the session ID stands in (unique and never changes).
 * The path depends only on the session and its Location, so every Step names the same file (and a
 * moved session names the file of its new project). The plan agent's permission rules allow edits to
 * `.opencode/plans/*.md` and to `<data dir>/plans/*.md` (see AgentCatalog.builtins).
 */

import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { FileSystem } from "@effect/platform"
import type { Errors, Identifier, Location, Session } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option } from "effect"
import { Locations } from "../location/locations.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { Sessions } from "./sessions.js"

/** Whether `projectDirectory` is a git worktree: it holds `.git` (a directory, or a file for linked worktrees). */
export const isGitWorktree = (projectDirectory: string): boolean =>
  nodeFs.statSync(nodePath.join(projectDirectory, ".git"), { throwIfNoEntry: false }) !== undefined

/** The Plan File of `session` at `location` (see the module doc). Pure but for the `.git` check. */
export const path = (input: {
  readonly session: Pick<Session.SessionV2Info, "id" | "time">
  readonly location: Location.LocationInfo
  readonly dataDir: string
}): string => {
  const base = isGitWorktree(input.location.project.directory)
    ? nodePath.join(input.location.project.directory, ".opencode", "plans")
    : nodePath.join(input.dataDir, "plans")
  return nodePath.join(base, `${input.session.time.created}-${input.session.id}.md`)
}

/** A session's Plan File and whether it exists now. */
export interface Located {
  /** Absolute. */
  readonly path: string
  readonly exists: boolean
  /** The project root of the session's Location, for naming the file relative to it. */
  readonly projectDirectory: string
}

/** The path as the user reads it: relative to the project root when inside it, else absolute. Pure. */
export const display = (located: Pick<Located, "path" | "projectDirectory">): string => {
  const relative = nodePath.relative(located.projectDirectory, located.path)
  return relative.startsWith("..") || nodePath.isAbsolute(relative) ? located.path : relative
}

export interface Interface {
  /**
   * The session's Plan File, at its current Location, and whether it exists now. Reads the session
   * and resolves its Location; writes nothing. Unknown session → SessionNotFoundError; a Location
   * that no longer resolves → InvalidRequestError.
   */
  readonly locate: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<Located, Errors.SessionNotFoundError | Errors.InvalidRequestError>
  /**
   * Deletes the session's Plan File from the data directory (`<data dir>/plans/`), when there is one,
   * for a session being deleted; resolves with the path deleted, if any. The one in a git worktree
   * (`.opencode/plans/`) belongs to the project, next to its code, and is kept. Reads no session row
   * (the record is given). Never fails: a file that cannot be deleted is logged.
   */
  readonly discard: (session: Pick<Session.SessionV2Info, "id" | "time">) => Effect.Effect<Option.Option<string>>
}

/** `yield* PlanFile.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/PlanFile")<Service, Interface>() {}

export interface Options {
  /** The data directory: the plans of sessions outside a git worktree live in `<dataDir>/plans/`. */
  readonly dataDir: string
}

export const layer = (
  options: Options
): Layer.Layer<Service, never, Sessions.Service | Locations.Service | FileSystem.FileSystem> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const locations = yield* Locations.Service
      const fs = yield* FileSystem.FileSystem
      const locate = Traced.fn("PlanFile.locate")(
        function* (sessionID: Identifier.SessionID) {
          const session = yield* sessions.get(sessionID)
          // As the drain resolves it for the Step.
          const location = yield* locations.resolve(session.location)
          const file = path({ session, location, dataDir: options.dataDir })
          const exists = yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))
          return { path: file, exists, projectDirectory: location.project.directory } satisfies Located
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )
      const discard = Traced.fn("PlanFile.discard")(
        function* (session: Pick<Session.SessionV2Info, "id" | "time">) {
          const file = nodePath.join(options.dataDir, "plans", `${session.time.created}-${session.id}.md`)
          if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) return Option.none<string>()
          return yield* fs.remove(file).pipe(
            Effect.as(Option.some(file)),
            Effect.catchAll((error) =>
              Effect.logWarning("the deleted session's plan file could not be removed", error).pipe(
                Effect.annotateLogs({ path: file }),
                Effect.as(Option.none<string>())
              )
            )
          )
        },
        (effect, session) => LogAnnotation.session(effect, session.id)
      )
      return Service.of({ locate, discard })
    })
  )
