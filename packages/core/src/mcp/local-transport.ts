export * as LocalTransport from "./local-transport.js"

/**
 * The transport of a `local` MCP server: JSON-RPC over the stdio of a child process that leads its
 * own Process Tree (`ProcessTree.spawn`: a new session and process group, marked with the tree's
 * scope id), so that everything the server starts (an `npx` wrapper's node, a server's own helpers)
 * ends with it.
 *
 * - **Start** resolves once the process is spawned; a command that cannot be spawned fails it.
 * - **Close** ends stdin first (a well-behaved server exits on EOF), then terminates the whole tree
 *   (`ProcessTree.terminate`: SIGTERM, up to {@link killGrace}, then SIGKILL) and reports `onclose`
 *   once. Idempotent.
 * - **Process exit** of the leader (a crash, an `exit`) reports `onclose` once, and the rest of its
 *   tree is terminated the same way.
 * - **Stderr first:** `onclose` is reported only after the server's stderr has been read to its end
 *   (or {@link stderrDrain} has passed), so what a crashing server printed is part of the failure.
 * - **Host exit:** a tree still alive when the host exits is SIGKILLed from ProcessTree's `exit`
 *   handler, so a server never outlives the host that started it (unless the host itself is SIGKILLed).
 *
 * Messages are newline-delimited JSON (the SDK's `ReadBuffer` and `serializeMessage`); a line that
 * is not a JSON-RPC message is reported through `onerror` and skipped.
 */

import type { ChildProcess } from "node:child_process"
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Transport as SdkTransport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { ProcessTree } from "../tool/builtin/process-tree.js"

/** How long a closing server's tree has between SIGTERM and SIGKILL. */
export const killGrace = "2 seconds"

/** How long `onclose` waits, after the tree is gone, for the rest of its stderr. */
export const stderrDrain = 1000

export interface Options {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  /** Called with every chunk the server writes to stderr. */
  readonly onStderr?: (chunk: string) => void
}

/** The SDK transport of one local server (see the module doc); one process per instance. */
export class Transport implements SdkTransport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  readonly #options: Options
  readonly #buffer = new ReadBuffer()
  #child: ChildProcess | undefined
  #tree: ProcessTree.Tree | undefined
  #closed = false
  #terminating: Promise<void> | undefined
  #stderrEnded: Promise<void> = Promise.resolve()

  constructor(options: Options) {
    this.#options = options
  }

  /** The server's process id once spawned. */
  get pid(): number | undefined {
    return this.#tree?.leader
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const { child, tree } = ProcessTree.spawn(this.#options.command, [...this.#options.args], {
        env: { ...this.#options.env },
        cwd: this.#options.cwd,
        stdio: ["pipe", "pipe", "pipe"]
      })
      this.#child = child
      this.#tree = tree
      const stderr = child.stderr
      if (stderr !== null) this.#stderrEnded = new Promise((done) => stderr.once("close", () => done()))
      child.once("error", (error) => {
        reject(error)
        this.onerror?.(error)
        void this.#end()
      })
      child.once("spawn", () => resolve())
      child.once("exit", () => void this.#end())
      child.stdin?.on("error", (error) => this.onerror?.(error))
      child.stdout?.on("data", (chunk: Buffer) => {
        this.#buffer.append(chunk)
        for (;;) {
          let message: JSONRPCMessage | null
          try {
            message = this.#buffer.readMessage()
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)))
            continue
          }
          if (message === null) break
          this.onmessage?.(message)
        }
      })
      child.stderr?.on("data", (chunk: Buffer) => this.#options.onStderr?.(chunk.toString()))
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin
      if (stdin === undefined || stdin === null || this.#closed || stdin.destroyed) {
        reject(new Error("the server process is not running"))
        return
      }
      if (stdin.write(serializeMessage(message))) resolve()
      else stdin.once("drain", () => resolve())
    })
  }

  close(): Promise<void> {
    return this.#end()
  }

  /** Ends stdin, terminates the tree and reports `onclose`, once; later calls await the same end. */
  #end(): Promise<void> {
    if (this.#terminating !== undefined) return this.#terminating
    this.#closed = true
    this.#child?.stdin?.end()
    const tree = this.#tree
    this.#terminating = (
      tree === undefined ? Promise.resolve() : Effect.runPromise(ProcessTree.terminate(tree, killGrace))
    )
      .then(() => settledWithin(this.#stderrEnded, stderrDrain))
      .then(() => {
        this.#buffer.clear()
        this.onclose?.()
      })
    return this.#terminating
  }
}

/** Resolves when `promise` settles or `ms` have passed, whichever is first. */
const settledWithin = (promise: Promise<void>, ms: number): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    void promise.finally(() => {
      clearTimeout(timer)
      resolve()
    })
  })
