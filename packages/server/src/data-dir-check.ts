export * as DataDirCheck from "./data-dir-check.js"

import * as fs from "node:fs"
import * as path from "node:path"
import type { Paths } from "@opencode-ai/core"
import { Effect } from "effect"
import { DataDirError } from "./startup-error.js"

/**
 * Checks, before anything is opened, that the server can keep its files: the data directory and the
 * database file's directory exist (created when missing) and are directories this process can read
 * and write, and the database file, when it exists, is an SQLite database (or empty) it can read and
 * write. With `databaseFile: false` (PostgreSQL is selected) only the data directory is checked: the
 * SQLite file is neither needed nor created. Fails with the first problem as a DataDirError. A check,
 * not a guarantee: a file can still change afterwards, and a failure to open the database then stays a defect.
 */
export const run = (
  paths: Pick<Paths.Paths, "dataDir" | "databaseFile">,
  options: { readonly databaseFile: boolean } = { databaseFile: true }
): Effect.Effect<void, DataDirError> =>
  Effect.gen(function* () {
    yield* usableDirectory(paths.dataDir, "directory", "the data directory")
    if (!options.databaseFile) return
    const databaseFile = path.resolve(paths.databaseFile)
    yield* usableDirectory(path.dirname(databaseFile), "database", "the database file's directory")
    yield* Effect.try({
      try: () => {
        const stat = fs.statSync(databaseFile, { throwIfNoEntry: false })
        if (stat === undefined) return
        if (!stat.isFile()) throw new Error("not a regular file")
        fs.accessSync(databaseFile, fs.constants.R_OK | fs.constants.W_OK)
        // An empty file is a new database to SQLite; anything else must start with its header.
        if (stat.size > 0 && !hasSqliteHeader(databaseFile)) throw new Error("not an SQLite database")
      },
      catch: (error) => failure("database", databaseFile, "the database file", error)
    })
  })

const sqliteHeader = Buffer.from("SQLite format 3\0", "latin1")

const hasSqliteHeader = (file: string): boolean => {
  const descriptor = fs.openSync(file, "r")
  try {
    const head = Buffer.alloc(sqliteHeader.length)
    return fs.readSync(descriptor, head, 0, head.length, 0) === head.length && head.equals(sqliteHeader)
  } finally {
    fs.closeSync(descriptor)
  }
}

const usableDirectory = (directory: string, kind: DataDirError["kind"], what: string) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(directory, { recursive: true })
      if (!fs.statSync(directory).isDirectory()) throw new Error("not a directory")
      fs.accessSync(directory, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK)
    },
    catch: (error) => failure(kind, directory, what, error)
  })

const failure = (kind: DataDirError["kind"], file: string, what: string, error: unknown) => {
  const reason = error instanceof Error ? error.message : String(error)
  return new DataDirError({ kind, path: file, reason, message: `cannot use ${what} ${file}: ${reason}` })
}
