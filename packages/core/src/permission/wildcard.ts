export * as Wildcard from "./wildcard.js"

import wildcardMatch from "wildcard-match"

/**
 * The wildcard language of permission rules (the `action` and `resource` patterns), with upstream's
 * semantics, compiled by the `wildcard-match` library:
 *
 * - `*` matches any run of characters, INCLUDING path separators and newlines: `*.env` matches
 *   `/repo/config/.env`, `<data>/plans/*` matches every file below that directory, and `git *`
 *   matches a multi-line `git commit -m …`. There is no separate `**`.
 * - `?` matches exactly one character (any character).
 * - Everything else is literal: `[`, `]`, `{`, `}`, `(`, `)`, `!` carry no glob meaning (they are
 *   common in shell commands and URLs).
 * - A pattern ending in ` *` (space, star) also matches without that tail: `ls *` matches `ls` as
 *   well as `ls -la`.
 * - Backslashes read as `/` on both sides, so Windows paths match `/` patterns; matching ignores
 *   case on Windows only.
 * - The whole value must match (anchored at both ends).
 *
 * Why not picomatch: it is a path glob. Its `*` stops at `/`, and even in its bash mode a star never
 * matches a `.` or `..` segment, so a deny rule such as `rm *` would silently miss `rm -rf /a/../b`.
 * Permission resources are paths, commands and URLs alike, so they need plain wildcards.
 */

type Matcher = (value: string) => boolean

const flags = process.platform === "win32" ? "si" : "s"
const compiled = new Map<string, Matcher>()
/** Rulesets are small and stable; the cache only guards against unbounded growth. */
const cacheLimit = 4096

const slashes = (text: string): string => text.replaceAll("\\", "/")

const compile = (pattern: string): Matcher => {
  // The library's own syntax beyond `*` and `?` (classes, leading negation) is escaped away.
  const escaped = slashes(pattern).replace(/[[\]!]/g, "\\$&")
  const alternatives = escaped.endsWith(" *") ? [escaped, escaped.slice(0, -2)] : [escaped]
  return wildcardMatch(alternatives, { separator: false, flags })
}

/** Whether `value` matches `pattern` (see the module doc). Pure; compiled patterns are cached. */
export const match = (value: string, pattern: string): boolean => {
  let matcher = compiled.get(pattern)
  if (matcher === undefined) {
    if (compiled.size >= cacheLimit) compiled.clear()
    matcher = compile(pattern)
    compiled.set(pattern, matcher)
  }
  return matcher(slashes(value))
}
