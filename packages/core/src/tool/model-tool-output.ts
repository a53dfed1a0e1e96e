export * as ModelToolOutput from "./model-tool-output.js"

import type { ToolContent } from "@opencode-ai/schema"
import { Cause, Context, Effect, Fiber, Layer, Scope } from "effect"
import { Config } from "../config/config.js"
import { Traced } from "../observability/traced.js"
import { ManagedOutput } from "./managed-output.js"
import { countNewlines } from "./newline-count.js"
import type { ToolRegistry } from "./tool-registry.js"

/**
 * Model Tool Output bounding: the final, registry-enforced size limit on what a tool result puts in
 * Session history and replays to the model.
 *
 * - **The limit** is one aggregate limit per settlement over the result's *projected text*: at most
 *   `maxLines` lines and at most `maxBytes` UTF-8 bytes, whichever is reached first (Config
 *   `tool_output`, default 2000 lines / 50 KiB). It does not depend on the provider. A text of
 *   exactly the limit is not truncated. Lines are counted as newlines, plus one for a final line
 *   without a newline (`"a\nb\n"` and `"a\nb"` are 2 lines, `""` is 0).
 * - **The projected text** is the text parts of `content` joined with `"\n"` (as the model request
 *   renders them). A structured-only result (no content, a non-empty `structured`) projects to its
 *   JSON (pretty-printed, so the preview keeps whole lines); its `structured` value is never modified.
 *   File parts are references, not text: they are kept as they are.
 * - **Truncation** keeps the head and the tail (half the remaining budget each), never splitting a
 *   UTF-8 character, and ends them at line boundaries unless that would waste more than half of a
 *   side's budget (a very long line is then cut at a character boundary). Between them a marker
 *   line says how many lines and bytes were omitted and names the Managed Tool Output File holding
 *   the complete projected text, exactly as received, which is also returned in `outputPaths` (after
 *   any paths the tool returned itself, which always survive). The preview fits the limit whenever
 *   the limit can hold the marker; with a smaller limit it is the marker alone.
 * - **Degradation:** when the file cannot be written, the result stays a success; its preview says
 *   the output was truncated and the complete text could not be kept (no path), and a warning with
 *   the cause is logged for operators.
 * - **Streaming:** a {@link Bounder} takes the text in chunks with bounded memory (about twice
 *   `maxBytes`, plus one chunk and two 256 KiB write buffers, whatever the total size): it keeps the
 *   head, a ring buffer of the tail, and streams everything to the managed file once the limit is
 *   exceeded (never before, so small outputs create no file), in 256 KiB batches, one written while
 *   the next fills (a write resolves once its chunk is staged; a full buffer waits for the batch in
 *   flight, which is the backpressure). {@link Interface.bound} is a thin wrapper over it.
 *
 * None of these operations fails; none is interruptible halfway when run inside an uninterruptible
 * region (the Step runner bounds and publishes a settlement in one).
 */

/** The aggregate limit of one settlement. */
export interface Limits {
  readonly maxLines: number
  readonly maxBytes: number
}

/** The outcome of bounding one projected text. */
export interface Preview {
  /** The model-visible text: the input when it fits, else head + marker + tail. */
  readonly text: string
  readonly truncated: boolean
  /** The Managed Tool Output File with the complete text; only when truncated and kept. */
  readonly path?: string
  /** Truncated, and the complete text could not be kept. */
  readonly lossy: boolean
  /** The complete text's size. */
  readonly lines: number
  readonly bytes: number
  /** What the preview leaves out (0 when not truncated); lines counts the newlines omitted. */
  readonly omittedLines: number
  readonly omittedBytes: number
}

/** A bounded tool result: what a settlement publishes. */
export interface Bounded extends ToolRegistry.Result {
  readonly truncated: boolean
  readonly lossy: boolean
}

/**
 * Bounds one text given in chunks. Chunks are strings (written as UTF-8) or UTF-8 bytes (a character
 * may straddle two byte chunks). Calls are serialized; `finish` may be called once, after the last
 * chunk (later calls return the same preview). Closing the Bounder's scope without `finish` deletes
 * any partial managed file.
 */
export interface Bounder {
  readonly write: (chunk: string | Uint8Array) => Effect.Effect<void>
  readonly finish: Effect.Effect<Preview>
}

export interface Interface {
  /** The configured limit. */
  readonly limits: Limits
  /** A streaming Bounder under `limits` (default: the configured limit). */
  readonly bounder: (limits?: Limits) => Effect.Effect<Bounder, never, Scope.Scope>
  /** Bounds one complete text. */
  readonly boundText: (text: string, limits?: Limits) => Effect.Effect<Preview>
  /** Bounds a tool result's Model Tool Output (see the module doc). */
  readonly bound: (result: ToolRegistry.Result, limits?: Limits) => Effect.Effect<Bounded>
}

export class Service extends Context.Tag("@opencode-ai/core/ModelToolOutput")<Service, Interface>() {}

// ---------------------------------------------------------------------------------------------
// The pure part: counting, the head, the tail ring, and the cut.

const NL = 0x0a
const isContinuation = (byte: number | undefined) => byte !== undefined && (byte & 0xc0) === 0x80

/** Lines of a string, counted as in the module doc. */
export const countLines = (text: string): number => {
  if (text.length === 0) return 0
  let count = 0
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) count++
  return text.endsWith("\n") ? count : count + 1
}

const normalize = (limits: Limits): Limits => ({
  maxLines: Math.max(0, Math.floor(limits.maxLines)),
  maxBytes: Math.max(0, Math.floor(limits.maxBytes))
})

// Wider than any count of bytes or lines we can hold (< 2^53): 17 digits.
const WIDEST = 1e16

/** The marker line between head and tail (no newline). */
export const marker = (
  omitted: { readonly lines: number; readonly bytes: number },
  path: string | undefined
): string =>
  path !== undefined
    ? `[… ${omitted.lines} lines (${omitted.bytes} bytes) truncated. The full output is saved to ${path}; read it with offset/limit or search it with grep instead of rerunning the tool …]`
    : `[… ${omitted.lines} lines (${omitted.bytes} bytes) truncated. The full output could not be kept: this output is lossy …]`

const utf8Length = (text: string) => Buffer.byteLength(text, "utf8")
// A string chunk longer than this is encoded in slices, so the scratch buffer stays small.
const SLICE = 1 << 16
// The batch size of writes to the managed file. Measured on the 2-vCPU bench machine (bench/README.md):
// 256 KiB writes ran at 0.9–2.9 GiB/s, 1 MiB and larger ones varied from 0.2 to 4 GiB/s.
const STAGE = 1 << 18
const decoder = new TextDecoder()

/**
 * The synchronous core of a Bounder: counts lines and bytes, keeps the first `maxBytes` bytes and
 * a ring of the last `maxBytes + 1` bytes, and cuts the preview at the end.
 */
export class Window {
  readonly limits: Limits
  total = 0
  newlines = 0
  private lastByte = -1
  private readonly prefix: Uint8Array
  private prefixLength = 0
  private readonly ring: Uint8Array
  private ringPosition = 0

  constructor(limits: Limits) {
    this.limits = normalize(limits)
    this.prefix = new Uint8Array(this.limits.maxBytes)
    this.ring = new Uint8Array(this.limits.maxBytes + 1)
  }

  get lines(): number {
    return this.total === 0 ? 0 : this.lastByte === NL ? this.newlines : this.newlines + 1
  }

  /** Whether the text so far exceeds the limit (once true, it stays true). */
  get exceeded(): boolean {
    return this.total > this.limits.maxBytes || this.lines > this.limits.maxLines
  }

  /** The bytes so far, while they fit in the head buffer (i.e. before the byte limit is exceeded). */
  get retained(): Uint8Array {
    return this.prefix.subarray(0, this.prefixLength)
  }

  /** Takes the next bytes of the text: {@link count} then {@link keep}. */
  push(bytes: Uint8Array): void {
    this.count(bytes)
    this.keep(bytes)
  }

  /**
   * Counts the next bytes of the text (lines, bytes) and fills the head, but does not update the
   * tail ring: the caller must {@link keep} the same bytes, in the same order, before the preview
   * (a Bounder keeps them in batches, from its staging buffer).
   */
  count(bytes: Uint8Array): void {
    const n = bytes.length
    if (n === 0) return
    this.newlines += countNewlines(bytes)
    this.lastByte = bytes[n - 1]!
    this.total += n
    if (this.prefixLength < this.prefix.length) {
      const take = Math.min(n, this.prefix.length - this.prefixLength)
      this.prefix.set(bytes.subarray(0, take), this.prefixLength)
      this.prefixLength += take
    }
  }

  /** Moves the tail ring past bytes already {@link count}ed: only their last `maxBytes + 1` are copied. */
  keep(bytes: Uint8Array): void {
    const n = bytes.length
    if (n === 0) return
    const size = this.ring.length
    if (n >= size) {
      this.ring.set(bytes.subarray(n - size))
      this.ringPosition = 0
    } else {
      const first = Math.min(n, size - this.ringPosition)
      this.ring.set(bytes.subarray(0, first), this.ringPosition)
      if (first < n) this.ring.set(bytes.subarray(first), 0)
      this.ringPosition = (this.ringPosition + n) % size
    }
  }

  /** The last `count` bytes (count ≤ min(total, maxBytes + 1)), contiguous. */
  private last(count: number): Uint8Array {
    const size = this.ring.length
    const start = (this.ringPosition - count + size * 2) % size
    if (start + count <= size) return this.ring.subarray(start, start + count)
    const out = new Uint8Array(count)
    out.set(this.ring.subarray(start))
    out.set(this.ring.subarray(0, count - (size - start)), size - start)
    return out
  }

  /** The complete text, when it was not exceeded. */
  text(): string {
    return decoder.decode(this.retained)
  }

  /**
   * The preview: the complete text when it fits; else head + marker + tail, the marker built by
   * `mark` (whose longest form is reserved in the budget).
   */
  preview(
    mark: (omitted: { readonly lines: number; readonly bytes: number }) => string
  ): Omit<Preview, "path" | "lossy"> {
    const { maxLines, maxBytes } = this.limits
    const total = this.total
    const whole = { lines: this.lines, bytes: total }
    if (!this.exceeded) return { text: this.text(), truncated: false, ...whole, omittedLines: 0, omittedBytes: 0 }

    // The budget: the marker line and its two separating newlines first, then half each side.
    const reserve = utf8Length(mark({ lines: WIDEST, bytes: WIDEST })) + 2
    const contentBytes = Math.max(0, maxBytes - reserve)
    const headBytes = Math.floor(contentBytes / 2)
    const tailBytes = contentBytes - headBytes
    const contentLines = Math.max(0, maxLines - 1)
    const headLines = Math.ceil(contentLines / 2)
    const tailLines = contentLines - headLines

    // Head: at most headBytes and headLines lines, preferably ending at a line end.
    const prefix = this.retained
    let headEnd = Math.min(headBytes, total)
    if (headLines === 0) headEnd = 0
    else {
      let seen = 0
      for (let i = prefix.indexOf(NL); i !== -1 && i < headEnd; i = prefix.indexOf(NL, i + 1)) {
        if (++seen === headLines) {
          headEnd = i + 1
          break
        }
      }
    }
    if (headEnd > 0 && headEnd < total && prefix[headEnd - 1] !== NL) {
      const newline = prefix.lastIndexOf(NL, headEnd - 1)
      if (newline !== -1 && newline + 1 >= headEnd / 2) headEnd = newline + 1
      else while (headEnd > 0 && isContinuation(prefix[headEnd])) headEnd--
    }

    // Tail: at most tailBytes and tailLines lines after the head, preferably starting at a line start.
    const length = Math.min(tailBytes, total - headEnd)
    const extra = total - length > 0 ? 1 : 0 // the byte before the window, to see a line start
    const buffer = this.last(length + extra)
    const window = buffer.subarray(extra)
    const before = (i: number) => (i > 0 ? window[i - 1] : extra === 1 ? buffer[0] : NL)
    let start = 0
    if (tailLines === 0) start = length
    else {
      let seen = 0
      const from = window[length - 1] === NL ? length - 2 : length - 1
      for (
        let i = from < 0 ? -1 : window.lastIndexOf(NL, from);
        i !== -1;
        i = i === 0 ? -1 : window.lastIndexOf(NL, i - 1)
      ) {
        if (++seen === tailLines) {
          start = i + 1
          break
        }
      }
    }
    if (start < length && before(start) !== NL) {
      const newline = window.indexOf(NL, start)
      if (newline !== -1 && length - (newline + 1) >= (length - start) / 2) start = newline + 1
      else while (start < length && isContinuation(window[start])) start++
    }

    const head = prefix.subarray(0, headEnd)
    const tail = window.subarray(start)
    const omitted = {
      bytes: total - headEnd - tail.length,
      lines: this.newlines - countNewlines(head) - countNewlines(tail)
    }
    const headText = decoder.decode(head)
    const tailText = decoder.decode(tail)
    const text =
      (headText.length > 0 ? (headText.endsWith("\n") ? headText : `${headText}\n`) : "") +
      mark(omitted) +
      (tailText.length > 0 ? `\n${tailText}` : "")
    return { text, truncated: true, ...whole, omittedLines: omitted.lines, omittedBytes: omitted.bytes }
  }
}

// ---------------------------------------------------------------------------------------------
// Projection of a result to text, and back.

interface Projection {
  /** The projected text, or undefined when the result has no textual content. */
  readonly text: string | undefined
  /** Rebuilds the content around the bounded text. */
  readonly content: (text: string) => ReadonlyArray<ToolContent.LLMToolContent>
}

/** Pretty JSON (whole lines make a better preview); undefined for a value JSON cannot represent. */
const stringify = (value: unknown): string | undefined => {
  try {
    return JSON.stringify(value, null, 2)
  } catch {
    return undefined
  }
}

const project = (result: ToolRegistry.Result): Projection => {
  const texts = result.content.filter((part): part is ToolContent.ToolTextContent => part.type === "text")
  if (result.content.length === 0 && result.structured !== undefined && Object.keys(result.structured).length > 0) {
    const json = stringify(result.structured)
    if (json !== undefined) return { text: json, content: (text) => [{ type: "text", text }] }
  }
  if (texts.length === 0) return { text: undefined, content: () => result.content }
  const first = result.content.findIndex((part) => part.type === "text")
  return {
    text: texts.map((part) => part.text).join("\n"),
    // The bounded text takes the place of the first text part; file parts keep their order.
    content: (text) =>
      result.content.flatMap(
        (part, i): Array<ToolContent.LLMToolContent> =>
          part.type !== "text" ? [part] : i === first ? [{ type: "text", text }] : []
      )
  }
}

const fits = (text: string, limits: Limits) => {
  const { maxLines, maxBytes } = normalize(limits)
  return text.length <= maxBytes && utf8Length(text) <= maxBytes && countLines(text) <= maxLines
}

/**
 * Bounds a progress report without keeping anything (no file): progress is replaced by the final
 * settlement, so an oversized report is clipped to a preview whose marker says it is partial. Pure.
 */
export const clip = (result: ToolRegistry.Result, limits: Limits): ToolRegistry.Result => {
  const projection = project(result)
  if (projection.text === undefined || fits(projection.text, limits)) return result
  const window = new Window(limits)
  const encoder = new TextEncoder()
  for (const piece of ManagedOutput.slices(projection.text)) window.push(encoder.encode(piece))
  const preview = window.preview(
    (omitted) => `[… ${omitted.lines} lines (${omitted.bytes} bytes) not shown in this progress report …]`
  )
  return { ...result, content: projection.content(preview.text) }
}

// ---------------------------------------------------------------------------------------------
// The service.

/** The service under `defaults`, writing complete texts to `store`. */
export const makeWith = (store: ManagedOutput.Interface, defaults: Limits): Interface => {
  const bounder = (limits: Limits = defaults): Effect.Effect<Bounder, never, Scope.Scope> =>
    Effect.gen(function* () {
      const scope = yield* Effect.scope
      const semaphore = yield* Effect.makeSemaphore(1)
      const window = new Window(limits)
      const encoder = new TextEncoder()
      let scratch = new Uint8Array(0)
      let writer: ManagedOutput.Writer | undefined
      let failure: ManagedOutput.WriteError | undefined
      let finished: Preview | undefined

      // Bytes for the managed file are staged and written in batches of STAGE bytes, from two
      // buffers: one fills while the other's write is in flight (in a fiber of the Bounder's scope,
      // uninterruptible, so closing the scope waits for it before discarding the file). A full buffer
      // waits for the write in flight: at most one write is pending, and memory stays bounded.
      // The window's tail ring is moved past staged bytes once per batch, not per chunk.
      const stages: Array<Uint8Array | undefined> = [undefined, undefined]
      let current = 0
      let staged = 0
      let unkept = 0 // the staged bytes from here on are not yet in the window's tail ring
      let inFlight: Fiber.RuntimeFiber<void> | undefined

      const keepStaged = () => {
        if (staged > unkept) window.keep(stages[current]!.subarray(unkept, staged))
        unkept = staged
      }

      const lose = (error: ManagedOutput.WriteError) =>
        Effect.suspend(() => {
          failure = error
          const current = writer
          writer = undefined
          keepStaged()
          staged = 0
          unkept = 0
          return current === undefined ? Effect.void : current.discard
        })

      // Waits for the write in flight, if any (it never fails: a failure is handled by `lose`).
      const settle = Effect.suspend(() => {
        const fiber = inFlight
        inFlight = undefined
        return fiber === undefined ? Effect.void : Fiber.join(fiber)
      })

      // Sends the staged batch to the file (after the previous batch is written) and switches buffers.
      const flush: Effect.Effect<void> = Effect.suspend(() => {
        keepStaged()
        return Effect.zipRight(
          settle,
          Effect.suspend(() => {
            const target = writer
            if (target === undefined || staged === 0) {
              staged = 0
              unkept = 0
              return Effect.void
            }
            const bytes = stages[current]!.subarray(0, staged)
            current = 1 - current
            staged = 0
            unkept = 0
            // A forked fiber starts only when this one yields; without the yield that would be when
            // the other buffer is full, and the write would never overlap the filling.
            return Effect.forkIn(Effect.uninterruptible(Effect.catchAll(target.write(bytes), lose)), scope).pipe(
              Effect.flatMap((fiber) => {
                inFlight = fiber
                return Effect.yieldNow()
              })
            )
          })
        )
      })

      // Sends bytes to the file, in order; `kept`: the window's tail ring already holds them.
      const spill = (bytes: Uint8Array, kept: boolean): Effect.Effect<void> =>
        Effect.suspend(() => {
          if (bytes.length === 0) return Effect.void
          if (writer === undefined) {
            if (!kept) window.keep(bytes)
            return Effect.void
          }
          if (bytes.length >= STAGE) {
            // Written from the caller's buffer, so awaited before the write resolves.
            return Effect.zipRight(
              Effect.zipRight(flush, settle),
              Effect.suspend(() => {
                if (!kept) window.keep(bytes)
                return writer === undefined ? Effect.void : Effect.catchAll(writer.write(bytes), lose)
              })
            )
          }
          stages[current] ??= new Uint8Array(STAGE)
          const stage = stages[current]!
          const take = Math.min(bytes.length, STAGE - staged)
          stage.set(bytes.subarray(0, take), staged)
          staged += take
          if (kept) unkept = staged
          return staged < STAGE ? Effect.void : Effect.zipRight(flush, spill(bytes.subarray(take), kept))
        })

      const encode = (chunk: string | Uint8Array): Uint8Array => {
        if (typeof chunk !== "string") return chunk
        // Reused between chunks: each chunk is fully consumed (copied) before the next one is encoded.
        if (scratch.length < chunk.length * 3) scratch = new Uint8Array(Math.max(chunk.length * 3, 1024))
        return scratch.subarray(0, encoder.encodeInto(chunk, scratch).written)
      }

      const writeOne = (chunk: string | Uint8Array) =>
        Effect.suspend(() => {
          if (finished !== undefined) return Effect.dieMessage("ModelToolOutput.Bounder: write after finish")
          const bytes = encode(chunk)
          const exceeded = window.exceeded
          const before = window.total
          window.count(bytes)
          if (writer !== undefined) return spill(bytes, false)
          window.keep(bytes)
          if (exceeded || !window.exceeded) return Effect.void
          // The limit was just exceeded: from now on everything goes to a managed file, starting with
          // what came before this chunk (still all in the head buffer).
          return store.create.pipe(
            Scope.extend(scope),
            Effect.matchEffect({
              onFailure: lose,
              onSuccess: (created) =>
                Effect.suspend(() => {
                  writer = created
                  return Effect.zipRight(spill(window.retained.subarray(0, before), true), spill(bytes, true))
                })
            })
          )
        })

      // Whether a write or finish holds the semaphore (then a write takes its turn).
      let busy = false
      const serialized = <A>(effect: Effect.Effect<A>): Effect.Effect<A> =>
        semaphore.withPermits(1)(
          Effect.suspend(() => {
            busy = true
            return Effect.ensuring(
              effect,
              Effect.sync(() => {
                busy = false
              })
            )
          })
        )

      // The common case, done synchronously with no further effect: a byte chunk while the file is
      // being written that fits in the staging buffer, or any byte chunk once the output is lossy.
      const stagedNow = (bytes: Uint8Array): boolean => {
        if (busy || finished !== undefined) return false
        if (writer !== undefined) {
          if (staged + bytes.length >= STAGE) return false
          window.count(bytes)
          stages[current] ??= new Uint8Array(STAGE)
          stages[current]!.set(bytes, staged)
          staged += bytes.length
          return true
        }
        if (!window.exceeded) return false
        window.push(bytes)
        return true
      }

      const write = (chunk: string | Uint8Array) =>
        Effect.suspend(() =>
          typeof chunk !== "string" && stagedNow(chunk)
            ? Effect.void
            : serialized(
                typeof chunk === "string" && chunk.length > SLICE
                  ? Effect.forEach(ManagedOutput.slices(chunk), writeOne, { discard: true })
                  : writeOne(chunk)
              )
        )

      const finish = serialized(
        Effect.gen(function* () {
          if (finished !== undefined) return finished
          let path: string | undefined
          yield* flush // a failed write drops the writer (lossy)
          yield* settle
          if (writer !== undefined) {
            const committed = yield* Effect.either(writer.commit)
            if (committed._tag === "Right") path = committed.right
            else yield* lose(committed.left)
          }
          const preview = window.preview((omitted) => marker(omitted, path))
          if (preview.truncated && path === undefined && failure !== undefined) {
            yield* Effect.logWarning(
              "Model Tool Output truncated, and its complete text could not be kept in a managed tool output file",
              Cause.fail(failure)
            ).pipe(Effect.annotateLogs({ managedOutputPath: failure.path }))
          }
          finished = {
            ...preview,
            ...(path !== undefined ? { path } : {}),
            lossy: preview.truncated && path === undefined
          }
          return finished
        }).pipe(Traced.withSpan("ModelToolOutput.finish"))
      )

      return { write, finish } satisfies Bounder
    })

  const boundText = Traced.fn("ModelToolOutput.boundText")(function* (text: string, limits: Limits = defaults) {
    if (fits(text, limits)) {
      const lines = countLines(text)
      return {
        text,
        truncated: false,
        lossy: false,
        lines,
        bytes: utf8Length(text),
        omittedLines: 0,
        omittedBytes: 0
      } satisfies Preview
    }
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const bounding = yield* bounder(limits)
        yield* bounding.write(text)
        return yield* bounding.finish
      })
    )
  })

  const bound = Traced.fn("ModelToolOutput.bound")(function* (result: ToolRegistry.Result, limits: Limits = defaults) {
    const projection = project(result)
    const toolPaths = result.outputPaths ?? []
    const unchanged = { ...result, truncated: false, lossy: false } satisfies Bounded
    if (projection.text === undefined) return unchanged
    const preview = yield* boundText(projection.text, limits)
    if (!preview.truncated && result.content.length > 0) return unchanged
    const outputPaths = preview.path !== undefined ? [...toolPaths, preview.path] : toolPaths
    return {
      content: projection.content(preview.text),
      // The structured result is never modified.
      ...(result.structured !== undefined ? { structured: result.structured } : {}),
      ...(outputPaths.length > 0 ? { outputPaths } : {}),
      truncated: preview.truncated,
      lossy: preview.lossy
    } satisfies Bounded
  })

  return { limits: defaults, bounder, boundText, bound }
}

/** The service under the configured `tool_output` limit, over the Managed Tool Output store. */
export const make: Effect.Effect<Interface, never, ManagedOutput.Service | Config.Service> = Effect.gen(function* () {
  const store = yield* ManagedOutput.Service
  const config = yield* Config.Service
  return makeWith(store, config.toolOutput)
})

export const layer: Layer.Layer<Service, never, ManagedOutput.Service | Config.Service> = Layer.effect(Service, make)

/** The service under explicit limits (no Config needed). */
export const layerWith = (limits: Limits): Layer.Layer<Service, never, ManagedOutput.Service> =>
  Layer.effect(
    Service,
    Effect.map(ManagedOutput.Service, (store) => makeWith(store, limits))
  )
