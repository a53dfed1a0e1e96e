export * as Ptys from "./ptys.js"

import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import type * as NodePty from "@lydell/node-pty"
import { Errors, Identifier, type Pty, Quote } from "@opencode-ai/schema"
import { Context, Duration, Effect, Exit, Layer, Mailbox, Option, Runtime, type Scope, type Stream } from "effect"
import { LiveBus } from "../event/live-bus.js"
import { Traced } from "../observability/traced.js"
import { ProcessTree } from "../tool/builtin/process-tree.js"

/*
 * The PTYs of one Core: pseudo-terminals, each running one program (by default the user's login
 * shell) for a Location, held in memory for as long as the Core lives (they are not durable).
 *
 *   create ──► running ──(the program exits)──► exited ──┐
 *                 │                                       ├──(remove)──► gone
 *                 └───────────────────────────────────────┘
 *
 * Each PTY's program leads its own session and process group (node-pty makes it a session leader)
 * and is a Process Tree (`ProcessTree`): `remove`, and the Core's shutdown, kill the whole tree —
 * every process whose session or group is the program's, and everything carrying the tree's scope
 * id, background and `nohup` jobs included — not just the program. An exited PTY keeps its record
 * (with `exitCode`) and whatever it left running until it is removed.
 *
 * Output is kept in a ring of the last {@link retainedChars} characters, addressed by an absolute
 * offset (the cursor: characters since the PTY started), so a client that reconnects replays from
 * where it stopped. PTYs belong to the Location directory they were created for: the others do not
 * see them.
 *
 * Each change is announced on the LiveBus: `pty.created`, `pty.updated`, `pty.exited` (the
 * program's exit, with its code) and `pty.deleted` (removal, including at shutdown).
 */

/** How much output a PTY retains for replay, in UTF-16 code units (2 Mi). */
export const retainedChars = 2 * 1024 * 1024

/** The size a PTY starts with. */
export const defaultSize: Pty.PtySize = { cols: 80, rows: 24 }

/** Shells that are started as login shells (`-l`) when the caller gives no arguments. */
const loginShells = new Set(["bash", "dash", "fish", "ksh", "sh", "zsh"])

/**
 * The terminal invariants Core forces on every PTY, over anything the caller or the host set:
 * the terminal type node-pty emulates, and the marker that tells a program it runs in an OpenCode
 * terminal.
 */
export const forced = { TERM: "xterm-256color", OPENCODE_TERMINAL: "1" } as const

/**
 * The environment of a PTY's program, lowest precedence first: what the host process passes on
 * (`inherited`), then the caller's `env`, then the host's PTY Environment overlay, then
 * {@link forced}. A later layer replaces a variable of an earlier one; undefined values are dropped.
 */
export const environment = (input: {
  readonly inherited: Readonly<Record<string, string | undefined>>
  readonly caller?: Readonly<Record<string, string>> | undefined
  readonly overlay?: Readonly<Record<string, string>> | undefined
}): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const layer of [input.inherited, input.caller ?? {}, input.overlay ?? {}, forced]) {
    for (const [key, value] of Object.entries(layer)) if (value !== undefined) out[key] = value
  }
  return out
}

export interface CreateInput extends Pty.PtyCreateInput {
  /** The resolved Location directory the PTY belongs to; the default `cwd`. */
  readonly directory: string
  /** The host's PTY Environment overlay (see {@link environment}). */
  readonly overlay?: Readonly<Record<string, string>> | undefined
}

/** A connection to a PTY, open for as long as the scope it was made in. */
export interface Attachment {
  /** The retained output from the requested cursor (empty when it is older than what is retained). */
  readonly replay: string
  /** The offset of the end of `replay`: where `output` starts. */
  readonly cursor: number
  /**
   * The output produced after `replay`, as it comes. It ends when the program exits or the PTY is
   * removed, and fails with {@link SlowConsumer} when the consumer falls {@link attachmentCapacity}
   * chunks behind (it can reconnect from its cursor).
   */
  readonly output: Stream.Stream<string, SlowConsumer>
  /** Types `data` into the terminal; dropped once the program has exited. */
  readonly write: (data: string) => void
}

/** How many output chunks an attachment may hold undelivered before it is cut off. */
export const attachmentCapacity = 4096

export class SlowConsumer extends Error {
  readonly _tag = "Core/Pty/SlowConsumer"
}

export interface Interface {
  /** The PTYs of the Location `directory`, oldest first. */
  readonly list: (directory: string) => Effect.Effect<ReadonlyArray<Pty.PtyInfo>>
  readonly get: (directory: string, id: Identifier.PtyID) => Effect.Effect<Pty.PtyInfo, Errors.PtyNotFoundError>
  /**
   * Starts the program. Fails with `InvalidRequestError` (`field` `cwd` or `command`) when `cwd` is
   * not a directory or the command is not an executable file (a bare name is looked up on the
   * program's `PATH`). Not idempotent: every call starts a new PTY.
   */
  readonly create: (input: CreateInput) => Effect.Effect<Pty.PtyInfo, Errors.InvalidRequestError>
  /** Sets the title and/or the size (resizing an exited PTY does nothing). */
  readonly update: (
    directory: string,
    id: Identifier.PtyID,
    input: Pty.PtyUpdateInput
  ) => Effect.Effect<Pty.PtyInfo, Errors.PtyNotFoundError>
  /**
   * Forgets the PTY, ends its attachments and kills its Process Tree: SIGHUP to the program (a
   * terminal hang-up), then SIGTERM to every member, and SIGKILL to what is left after the grace
   * period. Resolves once no member is left (bounded; see `ProcessTree.terminate`); uninterruptible.
   */
  readonly remove: (directory: string, id: Identifier.PtyID) => Effect.Effect<void, Errors.PtyNotFoundError>
  /**
   * Attaches to the PTY's output from `cursor` (an offset from an earlier attachment; `-1` for none
   * of the retained output; default all of it). The replay and the live output join with nothing
   * lost or repeated. Detaches when the scope closes.
   */
  readonly attach: (
    directory: string,
    id: Identifier.PtyID,
    cursor?: number
  ) => Effect.Effect<Attachment, Errors.PtyNotFoundError, Scope.Scope>
}

export class Service extends Context.Tag("@opencode-ai/core/Ptys")<Service, Interface>() {}

export interface Options {
  /** The environment PTY programs inherit, under the caller's and the host's; default `process.env`. */
  readonly inherited?: Readonly<Record<string, string | undefined>> | undefined
  /** How long a removed PTY's processes get after SIGTERM before SIGKILL; default 1 s. */
  readonly killGrace?: Duration.DurationInput | undefined
}

interface Live {
  readonly info: {
    id: Identifier.PtyID
    title: string
    readonly command: string
    readonly args: ReadonlyArray<string>
    readonly cwd: string
    status: "running" | "exited"
    readonly pid: number
    exitCode?: number
  }
  readonly directory: string
  readonly process: NodePty.IPty
  readonly tree: ProcessTree.Tree
  /** The retained output and the offset of its first character. */
  buffer: string
  bufferStart: number
  /** The offset of the end of the output. */
  end: number
  readonly attachments: Set<Mailbox.Mailbox<string, SlowConsumer>>
}

const snapshot = (pty: Live): Pty.PtyInfo => ({ ...pty.info, args: [...pty.info.args] })

const isExecutableFile = (file: string): boolean => {
  try {
    if (!nodeFs.statSync(file).isFile()) return false
    nodeFs.accessSync(file, nodeFs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** `command` as an executable path: as given when it has a `/` (relative to `cwd`), else from `PATH`. */
const resolveCommand = (command: string, cwd: string, path: string | undefined): string | undefined => {
  if (command.includes("/")) {
    const file = nodePath.resolve(cwd, command)
    return isExecutableFile(file) ? file : undefined
  }
  for (const dir of (path ?? "").split(":")) {
    if (dir === "") continue
    const file = nodePath.resolve(cwd, dir, command)
    if (isExecutableFile(file)) return file
  }
  return undefined
}

/** The user's shell: `SHELL` when it names an executable, else `bash` from `PATH`, else `/bin/sh`. */
export const defaultShell = (env: Readonly<Record<string, string | undefined>>): string => {
  const shell = env.SHELL
  if (shell !== undefined && shell !== "") {
    const resolved = resolveCommand(shell, "/", env.PATH)
    if (resolved !== undefined) return resolved
  }
  return resolveCommand("bash", "/", env.PATH) ?? "/bin/sh"
}

const invalid = (field: string, message: string) =>
  new Errors.InvalidRequestError({ message, kind: "validation", field })

// node-pty loads a native addon: only on the first PTY, so a Core that starts none never loads it.
let nodePty: Promise<typeof NodePty> | undefined
const loadNodePty = () => {
  nodePty ??= import("@lydell/node-pty")
  return nodePty
}

export const layer = (options: Options = {}): Layer.Layer<Service, never, LiveBus.Service> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const bus = yield* LiveBus.Service
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      const announce = (type: string, data: unknown) => Effect.flatMap(LiveBus.envelope(type, data), bus.publish)
      const inherited = options.inherited ?? process.env
      const killGrace = options.killGrace ?? Duration.seconds(1)
      const ptys = new Map<Identifier.PtyID, Live>()

      const find = (directory: string, id: Identifier.PtyID) => {
        const pty = ptys.get(id)
        return pty !== undefined && pty.directory === directory
          ? Effect.succeed(pty)
          : Effect.fail(Errors.PtyNotFoundError.of(id))
      }

      const endAttachments = (pty: Live) => {
        for (const mailbox of pty.attachments) mailbox.unsafeDone(Exit.void)
        pty.attachments.clear()
      }

      /** Kills the PTY's whole Process Tree; it is already out of the map. */
      const kill = (pty: Live) =>
        Effect.gen(function* () {
          endAttachments(pty)
          if (pty.info.status === "running") {
            try {
              pty.process.kill("SIGHUP")
            } catch {
              // Already gone.
            }
          }
          yield* ProcessTree.terminate(pty.tree, killGrace)
          yield* announce("pty.deleted", { id: pty.info.id })
        }).pipe(Effect.uninterruptible)

      // The Core's shutdown kills every PTY that is left.
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          const left = [...ptys.values()]
          ptys.clear()
          return Effect.forEach(left, kill, { concurrency: "unbounded", discard: true })
        })
      )

      const create = Traced.fn("Ptys.create")(function* (input: CreateInput) {
        const cwd = nodePath.resolve(input.directory, input.cwd ?? ".")
        const isDirectory = yield* Effect.sync(() => {
          try {
            return nodeFs.statSync(cwd).isDirectory()
          } catch {
            return false
          }
        })
        if (!isDirectory)
          return yield* invalid("cwd", `The PTY's working directory ${Quote.clip(cwd)} is not a directory`)
        const env = environment({ inherited, caller: input.env, overlay: input.overlay })
        const command = input.command ?? defaultShell(env)
        const file = resolveCommand(command, cwd, env.PATH)
        if (file === undefined) {
          return yield* invalid(
            "command",
            `The PTY's command ${Quote.clip(command)} is not an executable file or on PATH`
          )
        }
        const args =
          input.args !== undefined
            ? [...input.args]
            : input.command === undefined && loginShells.has(nodePath.basename(file))
              ? ["-l"]
              : []
        const { spawn } = yield* Effect.promise(loadNodePty)
        const id = Identifier.create("pty", "ascending") as Identifier.PtyID
        const scoped = ProcessTree.scoped(env)
        const proc = yield* Effect.try({
          try: () =>
            spawn(file, args, {
              name: forced.TERM,
              cols: defaultSize.cols,
              rows: defaultSize.rows,
              cwd,
              env: scoped.env
            }),
          catch: (error) => invalid("command", `Cannot start ${Quote.clip(command)}: ${Quote.clip(String(error))}`)
        })
        let exited = false
        const pty: Live = {
          info: {
            id,
            title: input.title ?? `Terminal ${id.slice(-4)}`,
            command,
            args,
            cwd,
            status: "running",
            pid: proc.pid
          },
          directory: input.directory,
          process: proc,
          tree: ProcessTree.adopt({ leader: proc.pid, scope: scoped.scope, unreaped: () => !exited }),
          buffer: "",
          bufferStart: 0,
          end: 0,
          attachments: new Set()
        }
        proc.onData((chunk) => {
          pty.end += chunk.length
          pty.buffer += chunk
          if (pty.buffer.length > retainedChars) {
            const excess = pty.buffer.length - retainedChars
            pty.buffer = pty.buffer.slice(excess)
            pty.bufferStart += excess
          }
          for (const mailbox of pty.attachments) {
            if (!mailbox.unsafeOffer(chunk)) {
              mailbox.unsafeDone(Exit.fail(new SlowConsumer("The connection fell behind the PTY's output")))
              pty.attachments.delete(mailbox)
            }
          }
        })
        proc.onExit(({ exitCode, signal }) => {
          exited = true
          pty.info.status = "exited"
          // A program killed by a signal reports as a shell does: 128 + the signal number.
          const code = signal !== undefined && signal > 0 ? 128 + signal : Math.max(0, exitCode)
          pty.info.exitCode = code
          endAttachments(pty)
          runFork(announce("pty.exited", { id, exitCode: code }))
        })
        ptys.set(id, pty)
        yield* announce("pty.created", { info: snapshot(pty) })
        yield* Effect.annotateCurrentSpan({ ptyID: id, pid: proc.pid })
        return snapshot(pty)
      })

      return Service.of({
        list: (directory) =>
          Effect.sync(() => [...ptys.values()].filter((pty) => pty.directory === directory).map(snapshot)),
        get: (directory, id) => Effect.map(find(directory, id), snapshot),
        create,
        update: Traced.fn("Ptys.update")(function* (directory, id, input) {
          const pty = yield* find(directory, id)
          if (input.title !== undefined) pty.info.title = input.title
          if (input.size !== undefined && pty.info.status === "running") {
            try {
              pty.process.resize(input.size.cols, input.size.rows)
            } catch {
              // The program exited meanwhile.
            }
          }
          yield* announce("pty.updated", { info: snapshot(pty) })
          return snapshot(pty)
        }),
        remove: Traced.fn("Ptys.remove")(function* (directory, id) {
          const pty = yield* find(directory, id)
          ptys.delete(id)
          yield* kill(pty)
        }),
        attach: Traced.fn("Ptys.attach")(function* (directory, id, cursor) {
          const pty = yield* find(directory, id)
          const mailbox = yield* Mailbox.make<string, SlowConsumer>({ capacity: attachmentCapacity })
          // Synchronous, so no output arrives between the replay and the subscription.
          const start = yield* Effect.sync(() => {
            const from = cursor === -1 ? pty.end : Math.max(0, cursor ?? 0)
            const replay = from >= pty.end ? "" : pty.buffer.slice(Math.max(0, from - pty.bufferStart))
            if (pty.info.status === "running") pty.attachments.add(mailbox)
            else mailbox.unsafeDone(Exit.void)
            return { replay, cursor: pty.end }
          })
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              pty.attachments.delete(mailbox)
              mailbox.unsafeDone(Exit.void)
            })
          )
          return {
            ...start,
            output: Mailbox.toStream(mailbox),
            write: (data: string) => {
              if (pty.info.status !== "running") return
              try {
                pty.process.write(data)
              } catch {
                // The program exited meanwhile.
              }
            }
          }
        })
      })
    })
  )

/** Whether `text` is a cursor `connect` accepts: `-1` or a non-negative safe integer. */
export const parseCursor = (text: string | undefined): Option.Option<number> => {
  if (text === undefined) return Option.none()
  if (!/^(-1|\d{1,16})$/.test(text)) return Option.none()
  const value = Number(text)
  return Number.isSafeInteger(value) ? Option.some(value) : Option.none()
}
