export * as LogOutput from "./log-output.js"

import * as fs from "node:fs"
import * as path from "node:path"
import { Cause, Effect, HashMap, type Layer, List, Logger, type Scope } from "effect"

/**
 * Where the server's log lines go and how they look.
 *
 * - `logfmt` (the log file's format): one line per entry, `time=… level=INFO msg="…" key=value …`;
 * - `json`: one JSON object per line, `{"time", "level", "msg", …fields}`;
 * - `pretty`: for a person at a terminal, `12:00:00.000 INFO  msg key=value`, the level coloured
 *   when colours are on, and a failure's cause on the lines below.
 *
 * Every entry is flattened the same way ({@link entry}): the message's strings make `msg`, a plain
 * object logged with it (`Effect.logInfo("tool ran", { tool })`) adds its keys as fields, then the
 * log annotations (`sessionID` and the like) follow. A field whose name says it holds a credential
 * (`authorization`, `password`, `apiKey`, `token`, …) is written as `[redacted]`, whatever logged it.
 *
 * The file destination appends synchronously (no line is lost when the process exits right after
 * logging it) and rotates by size: before a line would take the file past `maxBytes`, it becomes
 * `opencode.log.1` (the older ones shift to `.2` … and the oldest beyond `keep` is deleted) and a new
 * file starts.
 */

export type Format = "logfmt" | "json" | "pretty"

export interface Rotation {
  /** A file is rotated before a line would take it past this size (default 10 MiB). */
  readonly maxBytes: number
  /** How many rotated files are kept besides the live one (default 5): `opencode.log.1` … `.5`. */
  readonly keep: number
}

export const defaultRotation: Rotation = { maxBytes: 10 * 1024 * 1024, keep: 5 }

/** A log entry, flattened: what every format writes. */
export interface Entry {
  readonly time: Date
  readonly level: string
  readonly msg: string
  readonly fields: ReadonlyArray<readonly [string, unknown]>
  /** The failure the entry was logged with, if any: a typed failure's tag and message, or a defect's stack. */
  readonly cause?: string | undefined
}

/** Field names whose values are credentials: never written. */
const secretKey =
  /^(authorization|proxy-authorization|cookie|set-cookie|password|passwd|secret|api[-_]?key|x-api-key|token|access[-_]?token|refresh[-_]?token|ticket|credentials?)$/i

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** A failure value as one short line: `Tag: message` for errors. */
const describeError = (error: unknown): string => {
  if (error instanceof Error || (typeof error === "object" && error !== null && "message" in error)) {
    const tag = (error as { _tag?: unknown })._tag
    const name = typeof tag === "string" ? tag : error instanceof Error ? error.name : "Error"
    return `${name}: ${String((error as { message: unknown }).message)}`
  }
  return String(error)
}

/** A cause as text: expected failures and interruptions in one line, defects with their stack. */
const describeCause = (cause: Cause.Cause<unknown>): string | undefined => {
  if (Cause.isEmpty(cause)) return undefined
  if (Cause.isInterruptedOnly(cause)) return "interrupted"
  const failures = [...Cause.failures(cause)]
  const defects = [...Cause.defects(cause)]
  if (defects.length === 0 && failures.length > 0) return failures.map(describeError).join("; ")
  return Cause.pretty(cause, { renderErrorCause: true })
}

/** Flattens one Effect log entry (see the module doc). */
export const entry = (options: Logger.Logger.Options<unknown>): Entry => {
  const words: Array<string> = []
  const fields: Array<readonly [string, unknown]> = []
  const add = (key: string, value: unknown) => {
    if (value === undefined) return
    fields.push([key, secretKey.test(key) ? "[redacted]" : value])
  }
  for (const part of Array.isArray(options.message) ? options.message : [options.message]) {
    if (typeof part === "string") words.push(part)
    else if (isPlainObject(part)) for (const [key, value] of Object.entries(part)) add(key, value)
    else if (part instanceof Error || (typeof part === "object" && part !== null && "_tag" in part))
      add("error", describeError(part))
    else if (part !== undefined) words.push(String(part))
  }
  for (const [key, value] of HashMap.toEntries(options.annotations)) add(key, value)
  if (List.isCons(options.spans)) {
    const now = options.date.getTime()
    for (const span of options.spans) add(span.label, `${now - span.startTime}ms`)
  }
  return {
    time: options.date,
    level: options.logLevel.label,
    msg: words.join(" "),
    fields,
    cause: describeCause(options.cause)
  }
}

/** A field value as text: strings as they are, anything else as JSON. */
const text = (value: unknown): string => {
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value)
  if (value instanceof Date) return value.toISOString()
  try {
    return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v)) ?? String(value)
  } catch {
    return String(value)
  }
}

/** A logfmt value: bare when it is one plain word, else double-quoted with JSON escapes. */
const logfmtValue = (value: string): string => (plainWord(value) ? value : JSON.stringify(value))

/** Non-empty, and no space, quote, `=`, backslash or control character. */
const plainWord = (value: string): boolean => {
  if (value === "") return false
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f || c === 0x22 || c === 0x3d || c === 0x5c || /\s/.test(value[i]!)) return false
  }
  return true
}

/** A key made safe for logfmt (no spaces, quotes or `=`). */
const logfmtKey = (key: string): string => key.replace(/[\s"=]/g, "_") || "_"

export const logfmt = (e: Entry): string => {
  const parts = [`time=${e.time.toISOString()}`, `level=${e.level}`, `msg=${logfmtValue(e.msg)}`]
  for (const [key, value] of e.fields) parts.push(`${logfmtKey(key)}=${logfmtValue(text(value))}`)
  if (e.cause !== undefined) parts.push(`cause=${logfmtValue(e.cause)}`)
  return parts.join(" ")
}

/** A JSON-safe copy of a field value (bigints as strings, anything unserialisable as text). */
const jsonValue = (value: unknown): unknown => {
  if (typeof value === "bigint") return String(value)
  if (typeof value === "function" || typeof value === "symbol") return String(value)
  try {
    return JSON.parse(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v)) ?? "null")
  } catch {
    return String(value)
  }
}

export const json = (e: Entry): string => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of e.fields) out[key] = jsonValue(value)
  return JSON.stringify({
    ...out,
    time: e.time.toISOString(),
    level: e.level,
    msg: e.msg,
    ...(e.cause !== undefined ? { cause: e.cause } : {})
  })
}

const esc = String.fromCharCode(27)
const ansi = (code: string, on: boolean) => (s: string) => (on ? `${esc}[${code}m${s}${esc}[0m` : s)
const levelColour: Record<string, string> = { DEBUG: "34", INFO: "32", WARN: "33", ERROR: "31", FATAL: "1;31" }

const clock = (date: Date): string =>
  `${String(date.getHours()).padStart(2, "0")}:${String(date.getMinutes()).padStart(2, "0")}:${String(
    date.getSeconds()
  ).padStart(2, "0")}.${String(date.getMilliseconds()).padStart(3, "0")}`

export const pretty = (e: Entry, colours: boolean): string => {
  const dim = ansi("2", colours)
  const level = ansi(levelColour[e.level] ?? "0", colours)(e.level.padEnd(5))
  const fields = e.fields.map(([key, value]) => `${dim(`${key}=`)}${logfmtValue(text(value))}`)
  const line = [dim(clock(e.time)), level, e.msg, ...fields].filter((part) => part !== "").join(" ")
  if (e.cause === undefined) return line
  return `${line}\n${e.cause
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n")}`
}

/** The line writer of a format (`pretty` with or without colours). */
export const formatter = (format: Format, colours = false): ((e: Entry) => string) =>
  format === "json" ? json : format === "pretty" ? (e) => pretty(e, colours) : logfmt

/**
 * A log file that appends whole lines synchronously and rotates by size (see the module doc). Its
 * directory is created. A line that cannot be written is dropped; so is one written after `close`.
 */
export interface RotatingFile {
  readonly write: (line: string) => void
  readonly close: () => void
}

export const openFile = (file: string, rotation: Rotation = defaultRotation): RotatingFile => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  let fd: number | undefined = fs.openSync(file, "a")
  let size = fs.fstatSync(fd).size
  const rotate = () => {
    if (fd !== undefined) fs.closeSync(fd)
    fd = undefined
    try {
      fs.rmSync(`${file}.${rotation.keep}`, { force: true })
      for (let n = rotation.keep - 1; n >= 1; n--) {
        if (fs.existsSync(`${file}.${n}`)) fs.renameSync(`${file}.${n}`, `${file}.${n + 1}`)
      }
      if (rotation.keep >= 1) fs.renameSync(file, `${file}.1`)
      else fs.rmSync(file, { force: true })
    } finally {
      // Whatever the shifting managed, logging goes on in the live file.
      fd = fs.openSync(file, "a")
      size = fs.fstatSync(fd).size
    }
  }
  return {
    write: (line) => {
      if (fd === undefined) return
      const bytes = Buffer.from(`${line}\n`, "utf8")
      try {
        if (size > 0 && size + bytes.length > rotation.maxBytes) rotate()
        if (fd !== undefined) fs.writeSync(fd, bytes)
        size += bytes.length
      } catch {
        // A log line that cannot be written (disk full, the directory removed) is dropped: logging
        // never fails the work it describes.
      }
    },
    close: () => {
      if (fd !== undefined) fs.closeSync(fd)
      fd = undefined
    }
  }
}

export interface Options {
  /** `stderr`, or the path of the log file. */
  readonly destination: "stderr" | { readonly file: string }
  /** Default: `pretty` on stderr when it is a terminal, `logfmt` otherwise. */
  readonly format?: Format | undefined
  /** The log file's rotation (default {@link defaultRotation}). */
  readonly rotation?: Rotation | undefined
  /** The environment `NO_COLOR` is read from; default `process.env`. */
  readonly env?: Record<string, string | undefined> | undefined
}

/** Whether stderr gets colours: only on a terminal, and never with `NO_COLOR` set (to anything but ""). */
export const colours = (env: Record<string, string | undefined> = process.env): boolean =>
  process.stderr.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "")

/**
 * Replaces the default logger with the server's (see the module doc) for the layer's lifetime; the
 * log file is opened when the layer is built and closed when it is released.
 */
export const layer = (options: Options): Layer.Layer<never> => {
  if (options.destination === "stderr") {
    const format = options.format ?? (process.stderr.isTTY === true ? "pretty" : "logfmt")
    const line = formatter(format, format === "pretty" && colours(options.env))
    return Logger.replace(
      Logger.defaultLogger,
      Logger.make((o) => void process.stderr.write(`${line(entry(o))}\n`))
    )
  }
  return Logger.replaceScoped(Logger.defaultLogger, Effect.orDie(fileLogger(options.destination.file, options)))
}

/**
 * A logger that writes `format` lines (default logfmt) to the rotating `file`, open for the Scope's
 * lifetime. Fails with the file system's error when the file cannot be opened (e.g. an unwritable
 * data directory).
 */
export const fileLogger = (
  file: string,
  options: Pick<Options, "format" | "rotation"> = {}
): Effect.Effect<Logger.Logger<unknown, void>, Error, Scope.Scope> => {
  const line = formatter(options.format ?? "logfmt")
  return Effect.acquireRelease(
    Effect.try({
      try: () => openFile(file, options.rotation),
      catch: (error) => (error instanceof Error ? error : new Error(String(error)))
    }),
    (opened) => Effect.sync(() => opened.close())
  ).pipe(Effect.map((opened) => Logger.make((o) => opened.write(line(entry(o))))))
}
