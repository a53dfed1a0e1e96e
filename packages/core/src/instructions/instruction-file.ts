export * as InstructionFile from "./instruction-file.js"

import * as nodeFs from "node:fs"
import { Effect } from "effect"

/** Whether a read failed because there is no regular file to read (missing, or a directory). */
const isMissing = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  ["ENOENT", "ENOTDIR", "EISDIR"].includes(String((error as { code?: unknown }).code))

/**
 * The text of one instruction file: `undefined` when there is none (missing, a directory, or a path
 * through a file), or fails with the error of reading what is there (a file without read permission,
 * a socket), which makes its source unavailable. Synchronous: a few small files at every Safe Step
 * Boundary, where a thread-pool round trip would wait behind the event loop's other work. Most of
 * them are usually missing, so a stat that does not throw looks first: a thrown ENOENT costs an error
 * and its stack for every missing file at every Step. A file removed between the stat and the read is
 * missing too.
 */
export const read = (path: string): Effect.Effect<string | undefined, unknown> =>
  Effect.suspend(() => {
    try {
      const stat = nodeFs.statSync(path, { throwIfNoEntry: false })
      if (stat === undefined || stat.isDirectory()) return Effect.succeed(undefined)
      return Effect.succeed(nodeFs.readFileSync(path, "utf8"))
    } catch (error) {
      return isMissing(error) ? Effect.succeed(undefined) : Effect.fail(error)
    }
  })
