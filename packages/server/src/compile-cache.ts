export * as CompileCache from "./compile-cache.js"

import * as module from "node:module"
import * as os from "node:os"
import * as path from "node:path"

/**
 * V8's compile cache for the bundled server (`module.enableCompileCache`, Node 22.1+): the code V8
 * compiled on one start is stored on disk and reused on the next, so a start compiles little of the
 * bundle again. It has to be on before the bundle's main chunk is loaded, so `bin.ts` calls
 * {@link enable} first and imports the rest afterwards.
 *
 * The cache lives in `<os temp>/opencode-compile-cache` (V8 keys each entry by the Node version and
 * the file's content, so one directory serves every build). `NODE_COMPILE_CACHE` (a directory) wins
 * when set, and `NODE_DISABLE_COMPILE_CACHE=1` turns it off, as for any Node program. Where Node has
 * no compile cache (Node 20) or the directory cannot be created or written, nothing happens: the
 * cache only ever saves time, it never stops a start.
 */
export const enable = (env: Record<string, string | undefined> = process.env): Status => {
  const enableCompileCache = (module as { enableCompileCache?: (directory?: string) => { status: number } })
    .enableCompileCache
  if (typeof enableCompileCache !== "function") return "unavailable"
  if (env.NODE_DISABLE_COMPILE_CACHE !== undefined && env.NODE_DISABLE_COMPILE_CACHE !== "") return "disabled"
  try {
    const directory = env.NODE_COMPILE_CACHE || path.join(os.tmpdir(), "opencode-compile-cache")
    const { status } = enableCompileCache(directory)
    const constants = (module as { constants?: { compileCacheStatus?: Record<string, number> } }).constants
      ?.compileCacheStatus
    if (constants === undefined) return "enabled"
    return status === constants.ENABLED || status === constants.ALREADY_ENABLED
      ? "enabled"
      : status === constants.DISABLED
        ? "disabled"
        : "failed"
  } catch {
    return "failed"
  }
}

/** What {@link enable} did: `unavailable` on a Node without the API, `failed` when the directory was unusable. */
export type Status = "enabled" | "disabled" | "failed" | "unavailable"
