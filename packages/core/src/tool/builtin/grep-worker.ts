export * as GrepWorker from "./grep-worker.js"

/**
 * The nice value a worker thread takes on Linux (the main thread keeps its own): a lower priority, so
 * that the main thread preempts a long match (measured with three workers stuck on `^(a+)+$` on a
 * loaded 2-core machine: 7 of ~100 loopback health probes over 50 ms at nice 0, 1-2 of ~170 at
 * nice 10, as with no worker), yet not the lowest, so an ordinary search still gets a share of a
 * busy machine.
 */
export const niceness = 10

/**
 * The program a grep worker thread runs, as self-contained CommonJS source for
 * `new Worker(source, { eval: true })`. Kept as a string (not a file next to this module) so it
 * loads the same way from the TypeScript sources under vitest and from the one-file server bundle,
 * where no separate worker file exists.
 *
 * Protocol (one request at a time, answered in order):
 * - request `{ id, pattern, bytes: Uint8Array, room }`: a whole file. It is decoded as UTF-8 (like
 *   `TextDecoder`), split at `\n` or `\r\n`, a final empty line dropped; the answer's `found` lists
 *   `[lineNumber, text, lineNumber, text, …]` (1-based) for the first `room` matching lines.
 * - request `{ id, pattern, lines: string[], room }`: the answer's `found` lists the indexes of the
 *   first `room` matching entries.
 * - an answer is `{ id, found }`, or `{ id, error }` when the pattern cannot be compiled or matching
 *   throws (e.g. a RangeError from the regex engine).
 *
 * The compiled RegExp (no flags, like the tool's validation) is cached per pattern. A pattern that
 * backtracks without end never answers; the caller's time limit terminates the thread, and V8 does
 * interrupt a running regex on `worker.terminate()` (checked for the interpreter and native tiers).
 */
export const source = `"use strict"
const { parentPort } = require("node:worker_threads")
// On Linux a thread has its own nice value: lowering this one's lets the main thread (HTTP, every
// session) win the CPU from a long match on a busy machine. Elsewhere setpriority applies to the
// whole process, so it is left alone there.
if (process.platform === "linux") {
  try {
    require("node:os").setPriority(${niceness})
  } catch {}
}
let pattern
let regex
parentPort.on("message", (request) => {
  try {
    if (request.pattern !== pattern) {
      regex = new RegExp(request.pattern)
      pattern = request.pattern
    }
    const found = []
    const room = request.room
    if (request.bytes !== undefined) {
      const lines = new TextDecoder().decode(request.bytes).split(/\\r?\\n/)
      if (lines[lines.length - 1] === "") lines.pop()
      for (let i = 0; i < lines.length && found.length < 2 * room; i++) {
        if (regex.test(lines[i])) found.push(i + 1, lines[i])
      }
    } else {
      const lines = request.lines
      for (let i = 0; i < lines.length && found.length < room; i++) {
        if (regex.test(lines[i])) found.push(i)
      }
    }
    parentPort.postMessage({ id: request.id, found })
  } catch (error) {
    parentPort.postMessage({ id: request.id, error: String((error && error.message) || error) })
  }
})
`
