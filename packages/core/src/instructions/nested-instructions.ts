export * as NestedInstructions from "./nested-instructions.js"

/**
 * Nested AGENTS.md: the Instruction Source `core/nested-instructions`, whose value is the AGENTS.md
 * files a session has come near by reading inside its Location, with their current contents.
 *
 * ```
 *   read tool succeeds on <loc>/a/b/file ──note──▶ rows (session, <loc>, <loc>/a/AGENTS.md),
 *                                                      (session, <loc>, <loc>/a/b/AGENTS.md)   "pending"
 *   next Safe Step Boundary: prepare observes the source ──▶ new files → ONE context.updated  "active"
 *   later boundaries: unchanged → nothing; edited → re-announced; deleted → no longer apply
 *   compaction → the rebaseline renders them; move → only rows of the new Location compose
 * ```
 *
 * Which files: `AGENTS.md` in each directory from the read target (a directory read) or its parent
 * (a file read) up to, but EXCLUDING, the Location directory: InstructionDiscovery already covers
 * the Location directory and its parents. Only existing regular files are noted, never the read
 * target itself (the model has just read it), and nothing for a target outside the Location or for
 * the Location directory itself. Noting is idempotent (a row per session, Location directory and
 * file), so a second read in the same directory adds nothing and the source value, hence what the
 * model is told, does not change. `OPENCODE_DISABLE_PROJECT_CONFIG` turns noting off, as it turns
 * off project files in InstructionDiscovery.
 *
 * Durability: the rows (table `nested_instruction`) are the pending-and-active record; whether a
 * file has been told to the model is the InstructionCheckpoint's Applied record, exactly as for an
 * InstructionEntry. A noted file is therefore admitted at the next Safe Step Boundary even after a
 * restart, and folds into every later baseline while the session stays in that Location.
 */

import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { SqlClient, SqlSchema } from "@effect/sql"
import type { Identifier, Location } from "@opencode-ai/schema"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { EnvFlag } from "../config/env-flag.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import { InstructionFile } from "./instruction-file.js"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("core/nested-instructions")

/** The instruction file name looked for in each nested directory. */
export const fileName = "AGENTS.md"

export const File = Schema.Struct({
  /** Absolute path of the file, as shown to the model. */
  path: Schema.String,
  content: Schema.String
}).annotations({ identifier: "NestedInstructionFile" })
export interface File extends Schema.Schema.Type<typeof File> {}

/** The session's active nested files, in the order they were noted (outer directories first per read). */
export const Value = Schema.Array(File).annotations({ identifier: "NestedInstructions" })
export type Value = typeof Value.Type

const render = (file: File): string => [`Instructions loaded from ${file.path}:`, file.content.trimEnd()].join("\n")

/** Every active file; empty (saying nothing) when none. */
export const baseline = (value: Value): string => value.map(render).join("\n\n")

/**
 * Only what is newly effective: files not told before, or whose content changed, and the files that
 * no longer apply. Unlike InstructionDiscovery's one ordered set, nested files are independent
 * additions (each applies to its own directory), so restating the unchanged ones would only repeat
 * them: each file is injected once.
 */
export const update = (value: Value, previous: Value): string => {
  const before = new Map(previous.map((file) => [file.path, file.content]))
  const now = new Set(value.map((file) => file.path))
  const changed = value.filter((file) => before.get(file.path) !== file.content).map(render)
  const gone = previous
    .filter((file) => !now.has(file.path))
    .map((file) => `The instructions loaded earlier from ${file.path} no longer apply.`)
  return [...gone, ...changed].join("\n\n")
}

/** Said when the source stops being composed or reports absence. */
export const removed = (previous: Value): string =>
  previous.length === 0
    ? ""
    : `The instructions loaded earlier from ${previous.map((file) => file.path).join(", ")} no longer apply.`

/** The nested source, observed with `load`. */
export const make = <R>(load: Effect.Effect<Instructions.Observation<Value>, never, R>): Instructions.Instructions<R> =>
  Instructions.make({ key, codec: Value, load, baseline, update, removed })

/**
 * The AGENTS.md candidates of a successful read of `target` (absolute) in Location `directory`,
 * outermost first: one per directory strictly below `directory` down to the target (a directory) or
 * its parent (a file), the target itself excluded. Empty outside the Location. Pure.
 */
export const candidates = (directory: string, target: string, kind: "file" | "directory"): ReadonlyArray<string> => {
  const root = nodePath.resolve(directory)
  const start = kind === "directory" ? nodePath.resolve(target) : nodePath.dirname(nodePath.resolve(target))
  const relative = nodePath.relative(root, start)
  if (relative === "" || relative.startsWith("..") || nodePath.isAbsolute(relative)) return []
  const out: Array<string> = []
  let current = root
  for (const segment of relative.split(nodePath.sep)) {
    current = nodePath.join(current, segment)
    out.push(nodePath.join(current, fileName))
  }
  return out.filter((file) => file !== nodePath.resolve(target))
}

// ---------------------------------------------------------------------------------------------------
// The service

export interface Options {
  /** The environment: `OPENCODE_DISABLE_PROJECT_CONFIG` ("1" or "true", any case) turns noting off. */
  readonly env: Readonly<Record<string, string | undefined>>
}

export interface Interface {
  /**
   * Notes the existing {@link candidates} of a successful read by `sessionID` in Location `directory`
   * as pending; idempotent. Writes nothing the model sees and wakes nothing: the next Safe Step
   * Boundary admits them. Resolves with the paths newly noted. Never fails (storage errors are defects).
   */
  readonly note: (
    sessionID: Identifier.SessionID,
    directory: string,
    target: string,
    kind: "file" | "directory"
  ) => Effect.Effect<ReadonlyArray<string>>
  /**
   * Observes the session's noted files of `location` once: their current contents, in noted order. A
   * file gone since is dropped (the update then says it no longer applies); any other read failure
   * makes the value unavailable (stale-while-revalidate). No rows is the empty value. Never fails.
   */
  readonly load: (
    sessionID: Identifier.SessionID,
    location: Location.LocationInfo
  ) => Effect.Effect<Instructions.Observation<Value>>
  /** The session's nested source at `location`, observed with {@link Interface.load} at each prepare. */
  readonly instructions: (
    sessionID: Identifier.SessionID,
    location: Location.LocationInfo
  ) => Instructions.Instructions<never>
}

/** NestedInstructions; `yield* NestedInstructions.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/NestedInstructions")<Service, Interface>() {}

const isFile = (file: string): boolean => {
  try {
    return nodeFs.statSync(file, { throwIfNoEntry: false })?.isFile() === true
  } catch {
    return false
  }
}

export const layer = (options: Options): Layer.Layer<Service, never, SqlClient.SqlClient> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const disabled = EnvFlag.isOn(options.env.OPENCODE_DISABLE_PROJECT_CONFIG)
      const Key = Schema.Struct({ sessionID: Schema.String, directory: Schema.String })
      // The table's queries; the service turns their failures into defects.
      const store = {
        lastPosition: SqlSchema.single({
          Request: Key,
          Result: Schema.Struct({ top: Schema.Number }),
          execute: ({ sessionID, directory }) => sql`
            SELECT coalesce(max(position), 0) AS top FROM nested_instruction
            WHERE session_id = ${sessionID} AND directory = ${directory}`
        }),
        insert: SqlSchema.findOne({
          Request: Schema.Struct({ ...Key.fields, path: Schema.String, position: Schema.Number, now: Schema.Number }),
          Result: Schema.Struct({ path: Schema.String }),
          execute: (row) => sql`
            INSERT INTO nested_instruction (session_id, directory, path, position, time_created)
            VALUES (${row.sessionID}, ${row.directory}, ${row.path}, ${row.position}, ${row.now})
            ON CONFLICT (session_id, directory, path) DO NOTHING
            RETURNING path`
        }),
        noted: PreparedSql.findAll(
          PreparedSql.make(
            sql,
            "SELECT path FROM nested_instruction WHERE session_id = ? AND directory = ? ORDER BY position, time_created, path"
          ),
          Schema.Struct({ path: Schema.String })
        )
      }

      const note = Traced.fn("NestedInstructions.note")(
        function* (sessionID: Identifier.SessionID, directory: string, target: string, kind: "file" | "directory") {
          if (disabled) return [] as ReadonlyArray<string>
          const root = nodePath.resolve(directory)
          const found = candidates(root, target, kind).filter(isFile)
          if (found.length === 0) return [] as ReadonlyArray<string>
          const now = yield* Clock.currentTimeMillis
          const noted: Array<string> = []
          // Positions after the last one noted, in order, so `position` order is outermost first.
          yield* Effect.gen(function* () {
            const last = yield* store.lastPosition({ sessionID, directory: root })
            yield* Effect.forEach(found, (path, index) =>
              Effect.map(
                store.insert({ sessionID, directory: root, path, position: last.top + index + 1, now }),
                (row) => Option.map(row, (row) => noted.push(row.path))
              )
            )
          }).pipe(sql.withTransaction, Effect.orDie)
          if (noted.length > 0) yield* Effect.logDebug("nested instructions noted").pipe(Effect.annotateLogs({ noted }))
          return noted as ReadonlyArray<string>
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const read = (path: string) =>
        Effect.map(InstructionFile.read(path), (content): File | undefined =>
          content === undefined ? undefined : { path, content }
        )

      const load = Traced.fn("NestedInstructions.load")(
        function* (sessionID: Identifier.SessionID, location: Location.LocationInfo) {
          const rows = yield* store.noted([sessionID, nodePath.resolve(location.directory)]).pipe(Effect.orDie)
          const files = yield* Effect.forEach(rows, (row) => read(row.path))
          return files.filter((file): file is File => file !== undefined) as Value
        },
        Instructions.orUnavailable,
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const instructions = (sessionID: Identifier.SessionID, location: Location.LocationInfo) =>
        make(load(sessionID, location))

      return Service.of({ note, load, instructions })
    })
  )
