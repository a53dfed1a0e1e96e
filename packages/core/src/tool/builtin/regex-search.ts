export * as RegexSearch from "./regex-search.js"

import { Worker } from "node:worker_threads"
import { Duration, Effect, Exit, Schema, type Scope } from "effect"
import { Traced } from "../../observability/traced.js"
import { GrepWorker } from "./grep-worker.js"

/**
 * Matching a model-supplied regular expression off the main thread, under a time limit.
 *
 * A JavaScript regex can backtrack for exponential time (`^(a+)+$` over `aaa…ab`), and a running
 * regex cannot be interrupted on the thread that runs it: on the main thread it would freeze every
 * session and the HTTP server. So each Searcher leases a worker thread (`grep-worker.ts`) and sends
 * it whole files or batches of lines; the main thread only waits. A watchdog counts the time the
 * worker spends on the Searcher's requests; past the limit it terminates the thread (V8 stops a
 * running regex on terminate, within milliseconds) and every request fails with TimeLimitExceeded.
 *
 * Workers are pooled per process: a Searcher closed after success returns its worker (up to
 * `maxIdle`, unreferenced so they never keep the process alive); one closed after a failure, a time
 * limit or an interruption terminates its worker, and closing waits until that thread has exited.
 */

/** The matching time a search gets when the caller gives none. */
export const defaultTimeLimit: Duration.DurationInput = "15 seconds"

/** Idle workers kept for the next search. */
const maxIdle = 2

/** The worker spent longer than the limit on the search's requests; it was terminated. */
export class TimeLimitExceeded extends Schema.TaggedError<TimeLimitExceeded>()("RegexSearch.TimeLimitExceeded", {
  pattern: Schema.String,
  limitMs: Schema.Number
}) {}

/** The pattern could not be compiled or matching threw in the worker, or the worker stopped by itself. */
export class MatchFailed extends Schema.TaggedError<MatchFailed>()("RegexSearch.MatchFailed", {
  pattern: Schema.String,
  message: Schema.String
}) {}

export type SearchError = TimeLimitExceeded | MatchFailed

/** A matching line: its 1-based number and its text. */
export interface Line {
  readonly line: number
  readonly text: string
}

export interface Searcher {
  /**
   * The first `room` matching lines of a whole file's bytes, decoded as UTF-8 and split at `\n` or
   * `\r\n` (a final empty line is not a line). Interrupting it abandons the request; the worker is
   * then terminated when the Searcher closes.
   */
  readonly file: (bytes: Uint8Array, room: number) => Effect.Effect<ReadonlyArray<Line>, SearchError>
  /** The indexes of the first `room` matching entries of `lines`; interruption as for `file`. */
  readonly lines: (lines: ReadonlyArray<string>, room: number) => Effect.Effect<ReadonlyArray<number>, SearchError>
}

interface Pooled {
  readonly worker: Worker
  /** The leasing Searcher's handlers; none while idle. */
  onMessage?: ((answer: Answer) => void) | undefined
  onStop?: ((reason: string) => void) | undefined
}

interface Answer {
  readonly id: number
  readonly found?: Array<number | string>
  readonly error?: string
}

const idle: Array<Pooled> = []
let live = 0

/** Worker threads alive now (leased, idle or terminating) and how many of them are idle. */
export const workers = (): { readonly live: number; readonly idle: number } => ({ live, idle: idle.length })

const spawn = (): Pooled => {
  const pooled: Pooled = {
    // No execArgv: a loader the host was started with (tsx, vitest) has no business in this thread.
    worker: new Worker(GrepWorker.source, { eval: true, name: "opencode-grep", execArgv: [] })
  }
  live++
  pooled.worker.on("message", (answer: Answer) => pooled.onMessage?.(answer))
  pooled.worker.on("error", (error) => pooled.onStop?.(error.message))
  pooled.worker.once("exit", (code) => {
    live--
    const at = idle.indexOf(pooled)
    if (at >= 0) idle.splice(at, 1)
    pooled.onStop?.(`the search worker exited (code ${code})`)
  })
  return pooled
}

const acquire = (): Pooled => {
  const pooled = idle.pop() ?? spawn()
  pooled.worker.ref()
  return pooled
}

interface Pending {
  /** Settles the request; none once the request was interrupted (its answer is then dropped). */
  settle: ((answer: Exit.Exit<Array<number | string>, SearchError>) => void) | undefined
}

/**
 * A Searcher for `pattern` (already known to compile) whose worker may spend at most `timeLimit`
 * on its requests in total. The worker is leased on the first request; closing the scope returns
 * or terminates it (see the module comment) and resolves once a terminated thread has exited.
 */
export const make = Traced.fn("RegexSearch.make")(function* (
  pattern: string,
  options: { readonly timeLimit?: Duration.DurationInput | undefined } = {}
): Effect.fn.Return<Searcher, never, Scope.Scope> {
  const limitMs = Duration.toMillis(Duration.decode(options.timeLimit ?? defaultTimeLimit))
  let leased: Pooled | undefined
  let stopped: SearchError | undefined
  let terminated: Promise<number> | undefined
  let abandoned = false
  let nextID = 0
  const pending = new Map<number, Pending>()
  let usedMs = 0
  let busySince = 0
  let watchdog: ReturnType<typeof setTimeout> | undefined

  const stop = (error: SearchError) => {
    if (stopped !== undefined) return
    stopped = error
    if (watchdog !== undefined) clearTimeout(watchdog)
    if (leased !== undefined) {
      leased.onMessage = undefined
      leased.onStop = undefined
      terminated = leased.worker.terminate()
    }
    for (const entry of pending.values()) entry.settle?.(Exit.fail(error))
    pending.clear()
  }

  const onMessage = (answer: Answer) => {
    const entry = pending.get(answer.id)
    if (entry === undefined) return
    pending.delete(answer.id)
    if (pending.size === 0) {
      usedMs += performance.now() - busySince
      if (watchdog !== undefined) clearTimeout(watchdog)
      watchdog = undefined
    }
    entry.settle?.(
      answer.error !== undefined
        ? Exit.fail(new MatchFailed({ pattern, message: answer.error }))
        : Exit.succeed(answer.found ?? [])
    )
  }

  const request = (message: Record<string, unknown>) =>
    Effect.async<Array<number | string>, SearchError>((resume) => {
      if (stopped !== undefined) return resume(Effect.fail(stopped))
      if (leased === undefined) {
        leased = acquire()
        leased.onMessage = onMessage
        leased.onStop = (reason) => stop(new MatchFailed({ pattern, message: reason }))
      }
      const id = nextID++
      const entry: Pending = { settle: (exit) => resume(exit) }
      pending.set(id, entry)
      if (pending.size === 1) {
        busySince = performance.now()
        watchdog = setTimeout(() => stop(new TimeLimitExceeded({ pattern, limitMs })), Math.max(0, limitMs - usedMs))
      }
      leased.worker.postMessage({ id, pattern, ...message })
      return Effect.sync(() => {
        entry.settle = undefined
        abandoned = true
      })
    })

  yield* Effect.addFinalizer((exit) =>
    Effect.promise(async () => {
      if (watchdog !== undefined) clearTimeout(watchdog)
      const pooled = leased
      if (pooled === undefined) return
      pooled.onMessage = undefined
      pooled.onStop = undefined
      const reusable =
        Exit.isSuccess(exit) && stopped === undefined && !abandoned && pending.size === 0 && idle.length < maxIdle
      if (reusable) {
        pooled.worker.unref()
        idle.push(pooled)
        return
      }
      await (terminated ?? pooled.worker.terminate())
    })
  )

  return {
    file: (bytes, room) =>
      Effect.map(request({ bytes, room }), (found) => {
        const lines: Array<Line> = []
        for (let i = 0; i + 1 < found.length; i += 2)
          lines.push({ line: found[i] as number, text: found[i + 1] as string })
        return lines
      }),
    lines: (lines, room) => Effect.map(request({ lines, room }), (found) => found as Array<number>)
  }
})
