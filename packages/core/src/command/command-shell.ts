export * as CommandShell from "./command-shell.js"

/**
 * Shell interpolation for command templates: runs one `` !`…` `` snippet and gives back what it
 * printed, for {@link CommandTemplate} to put in its place.
 *
 * The snippet runs with `/bin/bash -c` (`/bin/sh` where there is no bash) in the Location directory,
 * with the host's environment and no input, as the leader of a Process Tree (see
 * {@link ProcessTree}): whatever it leaves running in the background is killed when it exits, when it
 * times out, or when the expansion is interrupted (the request is abandoned or the host closes).
 * Standard output and standard error are captured together, in the order they arrive; the exit code
 * does not matter (a failing command's message is what the template shows).
 *
 * Bounds: at most `maxChars` characters are kept (the rest is dropped and a note says how much);
 * a snippet that runs longer than `timeout` is killed and fails with {@link CommandShellError}, as
 * does one that cannot be started.
 *
 * No permission is asked: as in upstream OpenCode, the snippets are part of a command that the
 * user (or the project's author) wrote and the user chose to run.
 */

import * as nodeFs from "node:fs"
import { Deferred, Duration, Effect, Exit, FiberId, Option, Schema } from "effect"
import { ProcessTree } from "../tool/builtin/process-tree.js"

/** Output kept from one snippet, in characters. */
export const defaultMaxChars = 30_000

/** How long one snippet may run. */
export const defaultTimeout = Duration.seconds(30)

/** A snippet could not be run to its end. */
export class CommandShellError extends Schema.TaggedError<CommandShellError>()("CommandShellError", {
  command: Schema.String,
  message: Schema.String
}) {}

export interface Options {
  readonly timeout?: Duration.DurationInput
  readonly maxChars?: number
  /** How long the members of the tree get between SIGTERM and SIGKILL when it is killed. */
  readonly killGrace?: Duration.DurationInput
}

const shell = () => (nodeFs.existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh")

/** Captured output, bounded to `max` characters; later text is counted, not kept. */
class Capture {
  private kept = ""
  private dropped = 0
  constructor(private readonly max: number) {}
  append(text: string) {
    const room = this.max - this.kept.length
    if (room >= text.length) this.kept += text
    else {
      this.kept += text.slice(0, Math.max(room, 0))
      this.dropped += text.length - Math.max(room, 0)
    }
  }
  text(): string {
    return this.dropped === 0
      ? this.kept
      : `${this.kept}\n[output truncated: ${this.dropped} more characters were not kept]`
  }
}

/** Runs `command` in `cwd` (see the module doc); resolves with its combined output. */
export const run = (command: string, cwd: string, options: Options = {}): Effect.Effect<string, CommandShellError> => {
  const timeout = Duration.decode(options.timeout ?? defaultTimeout)
  const capture = new Capture(options.maxChars ?? defaultMaxChars)
  return Effect.acquireUseRelease(
    Effect.sync(() => {
      const exited = Deferred.unsafeMake<void, Error>(FiberId.none)
      const closed = Deferred.unsafeMake<void>(FiberId.none)
      const { child, tree } = ProcessTree.spawnCommand(shell(), ["-c", command], {
        cwd,
        env: process.env
      })
      const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() }
      child.stdout?.on("data", (chunk: Buffer) => capture.append(decoders.stdout.decode(chunk, { stream: true })))
      child.stderr?.on("data", (chunk: Buffer) => capture.append(decoders.stderr.decode(chunk, { stream: true })))
      child.once("error", (error) => Deferred.unsafeDone(exited, Exit.fail(error)))
      child.once("exit", () => Deferred.unsafeDone(exited, Exit.void))
      child.once("close", () => {
        capture.append(decoders.stdout.decode() + decoders.stderr.decode())
        Deferred.unsafeDone(closed, Exit.void)
      })
      return { child, tree, exited, closed }
    }),
    ({ child, exited, closed }) =>
      Effect.gen(function* () {
        const ended = yield* Deferred.await(exited).pipe(
          Effect.mapError((error) => new CommandShellError({ command, message: `cannot run it: ${error.message}` })),
          Effect.timeoutOption(timeout)
        )
        if (Option.isNone(ended)) {
          return yield* new CommandShellError({
            command,
            message: `it did not finish within ${Duration.format(timeout)} and was killed`
          })
        }
        // Output written just before the exit may still be in the pipes; a background job holding
        // them open must not hold the expansion, so the wait is short.
        yield* Deferred.await(closed).pipe(Effect.timeoutOption("200 millis"))
        child.stdout?.destroy()
        child.stderr?.destroy()
        return capture.text()
      }),
    ({ child, tree }) =>
      Effect.gen(function* () {
        yield* ProcessTree.terminate(tree, options.killGrace ?? "1 second")
        child.stdout?.destroy()
        child.stderr?.destroy()
      })
  )
}
