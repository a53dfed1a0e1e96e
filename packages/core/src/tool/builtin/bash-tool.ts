export * as BashTool from "./bash-tool.js"

import * as nodeFs from "node:fs"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { Deferred, Duration, Effect, Exit, Option, Schedule, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BashPaths } from "./bash-paths.js"
import { BuiltinTool } from "./builtin-tool.js"
import { ProcessTree } from "./process-tree.js"
import { ToolPath } from "./tool-path.js"

/** How long a command may run when the call gives no `timeout`. */
export const defaultTimeoutMs = 2 * 60 * 1000

export const Input = Schema.Struct({
  command: Schema.String.annotations({ description: "The shell command to run" }),
  timeout: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())).annotations({
    description: `How long the command may run, in milliseconds. Default ${defaultTimeoutMs} (2 minutes).`
  }),
  workdir: Schema.optional(Schema.String).annotations({
    description:
      "The directory to run in (absolute, or relative to the working directory). Default: the working directory. Use this instead of `cd dir && ...`."
  }),
  description: Schema.optional(Schema.String).annotations({
    description: 'What the command does, in a few words (e.g. "List files in src")'
  })
})
export type Input = typeof Input.Type

export interface Options {
  /** The shell that runs the command with `-c`; default `/bin/bash` when present, else `/bin/sh`. */
  readonly shell?: string
  /** How often, at most, the output so far is published as progress; default 250 ms. */
  readonly progressInterval?: Duration.DurationInput
  /**
   * How long the processes a command leaves behind (all of them, at its end, timeout or
   * interruption) get after SIGTERM before they get SIGKILL; default 1 s.
   */
  readonly killGrace?: Duration.DurationInput
}

const description = `Runs a shell command and returns its output (stdout and stderr, interleaved) and exit code.

- The command runs in the working directory unless \`workdir\` is given; prefer \`workdir\` over \`cd\`.
- It stops after \`timeout\` milliseconds (default 2 minutes): the command and everything it started are killed.
- No process outlives the command: when it ends (or times out, or is interrupted), every process it started is killed, background (\`&\`), \`nohup\`, \`setsid\` and daemonized ones included. To use a server, start it and use it in the same command.
- Quote paths that contain spaces. Chain dependent commands with \`&&\`.
- Prefer the dedicated tools to read (read), search (grep, glob) and change files (edit, write, apply_patch).`

/** The most output kept in memory: the first and the last half of it, with a marker in between. */
const maxCapturedChars = 32 * 1024 * 1024
/** The most output one progress update carries: its tail. */
const progressChars = 16 * 1024

/**
 * Output collected from both streams, in arrival order, in bounded memory: beyond the capture limit
 * the head is kept, then a marker counting what was dropped, then the latest tail.
 */
class Output {
  private head = ""
  private tail: Array<string> = []
  private tailLength = 0
  private omitted = 0
  /** Bumped on every append, so progress publishes only when something changed. */
  version = 0

  append(text: string) {
    if (text === "") return
    this.version++
    const half = maxCapturedChars / 2
    if (this.head.length < half) {
      const room = half - this.head.length
      this.head += text.slice(0, room)
      text = text.slice(room)
      if (text === "") return
    }
    this.tail.push(text)
    this.tailLength += text.length
    while (this.tailLength > half) {
      const first = this.tail[0]!
      const excess = this.tailLength - half
      if (first.length <= excess) {
        this.tail.shift()
        this.tailLength -= first.length
        this.omitted += first.length
      } else {
        this.tail[0] = first.slice(excess)
        this.tailLength -= excess
        this.omitted += excess
      }
    }
  }

  /** Whether part of the output was dropped (the capture limit was exceeded). */
  get truncated(): boolean {
    return this.omitted > 0
  }

  text(): string {
    const tail = this.tail.join("")
    return this.omitted === 0
      ? this.head + tail
      : `${this.head}\n\n[... ${this.omitted} characters of output omitted ...]\n\n${tail}`
  }

  latest(chars: number): string {
    const all = this.text()
    return all.length <= chars ? all : all.slice(all.length - chars)
  }
}

interface Ended {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

const defaultShell = () => (nodeFs.existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh")

export const make = (options: Options = {}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const shell = options.shell ?? defaultShell()
    const progressInterval = Duration.decode(options.progressInterval ?? "250 millis")
    const killGrace = Duration.decode(options.killGrace ?? "1 second")

    /**
     * Runs `command` as the leader of a Process Tree (`ProcessTree.spawnCommand`: its own session
     * and process group, and a scope id in the environment of everything it starts; started by the
     * Spawn Helper where it runs), which is terminated however the run ends:
     *
     * - **Exit:** resolves when the shell exits; output still in flight is drained briefly, then
     *   whatever the command left running (background, `nohup`, `setsid` and double-forked jobs) is
     *   killed before the call returns.
     * - **Timeout:** the tree is killed and the result says the command timed out.
     * - **Interruption** (the session is interrupted, or the Core closes and interrupts its
     *   sessions): the tree is killed before the interruption completes.
     *
     * Killing (`ProcessTree.terminate`) is SIGTERM to every member, up to `killGrace` for them to
     * exit, then SIGKILL until none is left; it runs in the release, whose waits are plain sleeps, so
     * it returns within about `killGrace` + 1 s whatever the command does (ignoring SIGTERM included).
     */
    const run = (command: string, cwd: string, timeout: Duration.Duration, output: Output) =>
      Effect.acquireUseRelease(
        Effect.gen(function* () {
          const exited = yield* Deferred.make<Ended, Error>()
          const closed = yield* Deferred.make<void>()
          const { child, tree } = ProcessTree.spawnCommand(shell, ["-c", command], {
            cwd,
            env: process.env
          })
          const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() }
          child.stdout?.on("data", (chunk: Buffer) => output.append(decoders.stdout.decode(chunk, { stream: true })))
          child.stderr?.on("data", (chunk: Buffer) => output.append(decoders.stderr.decode(chunk, { stream: true })))
          child.once("error", (error) => Deferred.unsafeDone(exited, Exit.fail(error)))
          child.once("exit", (code, signal) => Deferred.unsafeDone(exited, Exit.succeed({ code, signal })))
          child.once("close", () => {
            output.append(decoders.stdout.decode() + decoders.stderr.decode())
            Deferred.unsafeDone(closed, Exit.void)
          })
          return { child, tree, exited, closed }
        }),
        ({ child, exited, closed }) =>
          Effect.gen(function* () {
            const ended = yield* Deferred.await(exited).pipe(
              Effect.mapError((error) => BuiltinTool.fail(`Cannot run the command: ${error.message}`)),
              Effect.timeoutOption(timeout)
            )
            if (Option.isNone(ended)) return Option.none<Ended>()
            // Output written just before the exit may still be in the pipes; a background job
            // holding them open must not hold the result, so the wait is short.
            yield* Deferred.await(closed).pipe(Effect.timeoutOption("200 millis"))
            child.stdout?.destroy()
            child.stderr?.destroy()
            return ended
          }),
        ({ child, tree }) =>
          Effect.gen(function* () {
            yield* ProcessTree.terminate(tree, killGrace)
            child.stdout?.destroy()
            child.stderr?.destroy()
          })
      )

    return BuiltinTool.define({
      name: "bash",
      description,
      input: Input,
      execute: Traced.fn("BashTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
        // The workdir is confined by its real path (symlinks resolved).
        const workdir = yield* ToolPath.target(context, input.workdir ?? ".")
        const cwd = workdir.path
        if (input.workdir !== undefined) {
          yield* ToolPath.authorize(context, workdir, { kind: "directory" })
          const info = yield* fs.stat(cwd).pipe(Effect.option)
          if (Option.isNone(info) || info.value.type !== "Directory") {
            return yield* BuiltinTool.fail(`The workdir ${cwd} is not a directory`)
          }
        }
        // The paths the command's text shows: outside ones ask external_directory, writes ask edit.
        yield* BashPaths.authorize(context, input.command, cwd)
        yield* context.ask({
          action: "bash",
          resources: [input.command],
          ...savePatterns(input.command),
          metadata: {
            command: input.command,
            workdir: cwd,
            ...(input.description !== undefined ? { description: input.description } : {})
          }
        })
        const timeoutMs = input.timeout ?? defaultTimeoutMs
        const output = new Output()

        // Progress: the latest output, published at most once per interval and only when it changed.
        let published = 0
        const publish = Effect.suspend(() => {
          if (output.version === published) return Effect.void
          published = output.version
          return context
            .progress({
              content: [{ type: "text", text: output.latest(progressChars) }],
              structured: { truncated: output.truncated } satisfies ToolStructured.Bash
            })
            .pipe(Effect.uninterruptible)
        })

        const ended = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* Effect.forkScoped(
              Effect.repeat(publish, Schedule.spaced(progressInterval)).pipe(Effect.delay(progressInterval))
            )
            return yield* run(input.command, cwd, Duration.millis(timeoutMs), output)
          })
        )
        const text = output.text()
        const shown = text === "" ? "(no output)" : text.replace(/\n$/, "")
        // Two parts, as upstream's bash result: the output, then how the command ended.
        const result = (status: string, structured: ToolStructured.Bash): ToolRegistry.Result => ({
          content: [
            { type: "text", text: shown },
            { type: "text", text: status }
          ],
          structured
        })
        if (Option.isNone(ended)) {
          return result(`The command timed out after ${timeoutMs} ms: it and every process it started were killed.`, {
            truncated: output.truncated,
            timeout: true
          })
        }
        const { code, signal } = ended.value
        return result(code !== null ? `Exit code: ${code}` : `Terminated by signal ${signal ?? "unknown"}`, {
          ...(code !== null ? { exit: code } : {}),
          truncated: output.truncated,
          ...(signal !== null ? { signal } : {})
        })
      })
    })
  })

/**
 * What a reply of `always` saves for a bash ask (the request's `save`, as upstream's `always`): for
 * one simple command, its program followed by ` *` (`git status --short` saves `git *`), so later
 * runs of that program are allowed in the project. A command with shell syntax around it (operators,
 * substitutions, redirections, quotes) saves only itself: a pattern could allow more than was shown.
 */
export const savePatterns = (command: string): { readonly save?: ReadonlyArray<string> } => {
  const trimmed = command.trim()
  if (trimmed === "" || /[;&|<>`$(){}\\'"\n*?[\]!#=]/.test(trimmed)) return {}
  const program = trimmed.split(/\s+/)[0]
  return program === undefined ? {} : { save: [`${program} *`] }
}
