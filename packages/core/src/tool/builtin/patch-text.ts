export * as PatchText from "./patch-text.js"

import { Either } from "effect"

/**
 * The patch format of the `apply_patch` tool (the envelope upstream's models are trained on):
 *
 * ```
 * *** Begin Patch
 * *** Add File: path          ← every following line starts with "+"
 * *** Delete File: path
 * *** Update File: path
 * *** Move to: new/path       ← optional, right after Update File
 * @@ optional context line     ← seeks to that line before matching the chunk
 *  context line               ← " " kept, "-" removed, "+" added
 * *** End of File             ← optional: the chunk matches at the end of the file
 * *** End Patch
 * ```
 *
 * Parsing and applying are pure: the tool reads the files, applies every hunk in memory, and writes
 * only when all of them applied.
 */

/** One contiguous change in an Update File hunk. */
export interface Chunk {
  /** The `@@ text` line: the file is searched for this line first, and the chunk matched after it. */
  readonly context?: string
  /** The lines the chunk expects (context and removed lines, in order). */
  readonly oldLines: ReadonlyArray<string>
  /** The lines that replace them (context and added lines, in order). */
  readonly newLines: ReadonlyArray<string>
  /** The chunk must match at the end of the file. */
  readonly endOfFile: boolean
}

export type Hunk =
  | { readonly type: "add"; readonly path: string; readonly contents: string }
  | { readonly type: "delete"; readonly path: string }
  | {
      readonly type: "update"
      readonly path: string
      readonly movePath?: string
      readonly chunks: ReadonlyArray<Chunk>
    }

const BEGIN = "*** Begin Patch"
const END = "*** End Patch"
const ADD = "*** Add File: "
const DELETE = "*** Delete File: "
const UPDATE = "*** Update File: "
const MOVE = "*** Move to: "
const EOF_MARKER = "*** End of File"

/**
 * The hunks of a patch, or a message saying what is wrong and where (line numbers are 1-based in the
 * patch text). Lenient about the envelope's surroundings: blank lines around it and a shell heredoc
 * wrapper (`<<'EOF'` … `EOF`) are ignored.
 */
export const parse = (text: string): Either.Either<ReadonlyArray<Hunk>, string> => {
  let lines = text.trim().split(/\r?\n/)
  if (
    lines.length >= 2 &&
    /^<<['"]?\w+['"]?$/.test(lines[0]!.trim()) &&
    /^\w+$/.test(lines[lines.length - 1]!.trim())
  ) {
    lines = lines.slice(1, -1)
  }
  if (lines[0]?.trim() !== BEGIN) return Either.left(`The patch must start with "${BEGIN}"`)
  if (lines[lines.length - 1]?.trim() !== END) return Either.left(`The patch must end with "${END}"`)
  const body = lines.slice(1, -1)
  const hunks: Array<Hunk> = []
  let i = 0
  const at = (index: number) => `line ${index + 2}`
  while (i < body.length) {
    const line = body[i]!
    if (line.trim() === "") {
      i++
      continue
    }
    if (line.startsWith(ADD)) {
      const file = line.slice(ADD.length).trim()
      const contents: Array<string> = []
      i++
      // The content runs until the first line without "+" (a blank line ends it too).
      while (i < body.length && body[i]!.startsWith("+")) {
        contents.push(body[i]!.slice(1))
        i++
      }
      if (i < body.length && body[i]!.trim() !== "" && !body[i]!.startsWith("***")) {
        return Either.left(`Invalid line in Add File ${file} at ${at(i)}: every content line must start with "+"`)
      }
      hunks.push({ type: "add", path: file, contents: contents.length === 0 ? "" : `${contents.join("\n")}\n` })
      continue
    }
    if (line.startsWith(DELETE)) {
      hunks.push({ type: "delete", path: line.slice(DELETE.length).trim() })
      i++
      continue
    }
    if (line.startsWith(UPDATE)) {
      const file = line.slice(UPDATE.length).trim()
      i++
      let movePath: string | undefined
      if (i < body.length && body[i]!.startsWith(MOVE)) {
        movePath = body[i]!.slice(MOVE.length).trim()
        i++
      }
      const chunks: Array<Chunk> = []
      let current:
        | { context?: string; oldLines: Array<string>; newLines: Array<string>; endOfFile: boolean }
        | undefined
      const flush = () => {
        if (current !== undefined && (current.oldLines.length > 0 || current.newLines.length > 0)) chunks.push(current)
        current = undefined
      }
      while (i < body.length) {
        const next = body[i]!
        if (next.trim() === EOF_MARKER) {
          if (current === undefined)
            return Either.left(`"${EOF_MARKER}" without a chunk in Update File ${file} at ${at(i)}`)
          current.endOfFile = true
          flush()
          i++
          continue
        }
        if (next.startsWith("***")) break
        if (next.startsWith("@@")) {
          flush()
          const context = next.slice(2).trim()
          current = { oldLines: [], newLines: [], endOfFile: false, ...(context === "" ? {} : { context }) }
          i++
          continue
        }
        // The first chunk of a hunk may omit its "@@" line.
        current ??= { oldLines: [], newLines: [], endOfFile: false }
        if (next === "" || next.startsWith(" ")) {
          current.oldLines.push(next.slice(1))
          current.newLines.push(next.slice(1))
        } else if (next.startsWith("-")) {
          current.oldLines.push(next.slice(1))
        } else if (next.startsWith("+")) {
          current.newLines.push(next.slice(1))
        } else {
          return Either.left(
            `Invalid line in Update File ${file} at ${at(i)}: "${next}" (lines start with " ", "-", "+" or "@@")`
          )
        }
        i++
      }
      flush()
      if (chunks.length === 0 && movePath === undefined) return Either.left(`Update File ${file} has no changes`)
      hunks.push({ type: "update", path: file, chunks, ...(movePath !== undefined ? { movePath } : {}) })
      continue
    }
    return Either.left(
      `Invalid patch ${at(i)}: "${line}" (expected "${ADD.trim()}", "${DELETE.trim()}" or "${UPDATE.trim()}")`
    )
  }
  if (hunks.length === 0) return Either.left("The patch contains no file operations")
  for (const hunk of hunks) {
    if (hunk.path === "") return Either.left(`A ${hunk.type} operation names no file`)
  }
  return Either.right(hunks)
}

/**
 * Where `pattern` occurs in `lines` at or after `start`: exactly first, then ignoring trailing
 * whitespace, then ignoring surrounding whitespace (models often get indentation or trailing spaces
 * slightly wrong; the chunk still has to match line for line). With `endOfFile`, the end of the file
 * is tried first. Pure.
 */
export const seek = (
  lines: ReadonlyArray<string>,
  pattern: ReadonlyArray<string>,
  start: number,
  endOfFile: boolean
): number | undefined => {
  if (pattern.length === 0) return start
  if (pattern.length > lines.length) return undefined
  const comparisons: ReadonlyArray<(a: string, b: string) => boolean> = [
    (a, b) => a === b,
    (a, b) => a.trimEnd() === b.trimEnd(),
    (a, b) => a.trim() === b.trim()
  ]
  const last = lines.length - pattern.length
  for (const same of comparisons) {
    const matchesAt = (index: number) => pattern.every((line, offset) => same(lines[index + offset]!, line))
    if (endOfFile && last >= start && matchesAt(last)) return last
    for (let index = start; index <= last; index++) if (matchesAt(index)) return index
  }
  return undefined
}

/**
 * The content of a file after an Update File hunk's chunks, or a message naming the first chunk that
 * does not match. Chunks apply in order, each searched after the previous one. The file keeps its line
 * ending style (LF or CRLF) and ends with a newline. Pure.
 */
export const applyChunks = (
  file: string,
  content: string,
  chunks: ReadonlyArray<Chunk>
): Either.Either<string, string> => {
  const eol = content.includes("\r\n") ? "\r\n" : "\n"
  const lines = content.split(/\r?\n/)
  if (lines[lines.length - 1] === "") lines.pop()
  const replacements: Array<readonly [number, number, ReadonlyArray<string>]> = []
  let index = 0
  for (const chunk of chunks) {
    if (chunk.context !== undefined) {
      const found = seek(lines, [chunk.context], index, false)
      if (found === undefined) return Either.left(`Cannot find the context line "${chunk.context}" in ${file}`)
      index = found + 1
    }
    if (chunk.oldLines.length === 0) {
      // A pure addition goes at the end of the file.
      replacements.push([lines.length, 0, chunk.newLines])
      continue
    }
    let oldLines = chunk.oldLines
    let newLines = chunk.newLines
    let found = seek(lines, oldLines, index, chunk.endOfFile)
    if (found === undefined && oldLines[oldLines.length - 1] === "") {
      // A trailing blank context line often stands for the end of the file.
      oldLines = oldLines.slice(0, -1)
      newLines = newLines[newLines.length - 1] === "" ? newLines.slice(0, -1) : newLines
      found = seek(lines, oldLines, index, chunk.endOfFile)
    }
    if (found === undefined) {
      return Either.left(`Cannot find these lines in ${file}:\n${chunk.oldLines.join("\n")}`)
    }
    replacements.push([found, oldLines.length, newLines])
    index = found + oldLines.length
  }
  const result = [...lines]
  for (const [start, length, inserted] of [...replacements].sort((a, b) => b[0] - a[0])) {
    result.splice(start, length, ...inserted)
  }
  return Either.right(result.length === 0 ? "" : `${result.join(eol)}${eol}`)
}
