import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import * as pty from "@lydell/node-pty"
import { TestDatabase } from "@opencode-ai/core/testing"
import { afterEach } from "vitest"
import { tempDir } from "./harness.js"

/**
 * The built `opencode` binary (`dist/bin.js`) as real processes, the way a user runs it. Every process
 * and terminal started here is SIGKILLed after each test of the file that imports this module.
 *
 * Each process gets `PATH`, `OPENCODE_DISABLE_MODELS_FETCH=1` (a test that wants a refresh names a
 * loopback `OPENCODE_MODELS_URL`), a fresh `HOME` and, under `OPENCODE_TEST_DATABASE=postgres`, the
 * URL of a PostgreSQL database of its own, then the caller's `env` on top; nothing else of the test's
 * own environment. It runs in `cwd`, by default the repository root.
 */

export const bin = path.resolve(__dirname, "../dist/bin.js")
const repositoryRoot = path.resolve(__dirname, "../../..")

const children: Array<ChildProcess> = []
const terminals: Array<pty.IPty> = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
  for (const terminal of terminals.splice(0)) {
    try {
      terminal.kill("SIGKILL")
    } catch {}
  }
})

export interface Options {
  readonly env?: Record<string, string> | undefined
  readonly cwd?: string | undefined
}

const environment = (env: Record<string, string> = {}): Record<string, string> => {
  const home = env.HOME ?? tempDir("home")
  return {
    PATH: process.env.PATH ?? "",
    HOME: home,
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    // Under OPENCODE_TEST_DATABASE=postgres, a PostgreSQL database standing for the data home.
    ...TestDatabase.serverEnv(env.XDG_DATA_HOME ?? home),
    ...env
  }
}

/** A running process of the binary, with what it has written so far. */
export interface Running {
  readonly child: ChildProcess
  readonly url: string
  readonly stdout: () => string
  readonly stderr: () => string
}

/**
 * Starts `opencode <argv>` (e.g. `serve --port 0`) and resolves once it prints `listening on <url>`;
 * rejects, with everything it wrote, if it exits first.
 */
export const listen = (argv: ReadonlyArray<string>, options: Options = {}): Promise<Running> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...argv], {
      cwd: options.cwd ?? repositoryRoot,
      env: environment(options.env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let out = ""
    let err = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve({ child, url: match[1]!, stdout: () => out, stderr: () => err })
    })
    child.stderr!.on("data", (chunk) => (err += chunk))
    child.on("exit", (code) => reject(new Error(`opencode ${argv.join(" ")} exited with ${code}: ${out}\n${err}`)))
  })

/** Runs `opencode <argv>` with pipes (no terminal) to its exit, with what it wrote. */
export const run = (
  argv: ReadonlyArray<string>,
  options: Options = {}
): Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...argv], {
      cwd: options.cwd ?? repositoryRoot,
      env: environment(options.env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk) => (stdout += chunk))
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

/** Resolves with the process's exit code once it has exited (at once if it already has). */
export const exited = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.on("exit", resolve)
  )

/** Sends SIGTERM and resolves once the process has exited. */
export const stop = (child: ChildProcess): Promise<number | null> => {
  const done = exited(child)
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
  return done
}

/** The binary in a pseudo-terminal (120×40, xterm-256color), as a user types it. */
export interface Terminal {
  readonly term: pty.IPty
  /** Resolves with the exit status. */
  readonly exited: Promise<number>
  /** Everything written to the terminal so far. */
  readonly output: () => string
  /** Resolves once the output matches `pattern`; rejects if the process exits first. */
  readonly waitFor: (pattern: RegExp) => Promise<void>
}

export const terminal = (argv: ReadonlyArray<string>, options: Options = {}): Terminal => {
  const term = pty.spawn(process.execPath, [bin, ...argv], {
    name: "xterm-256color",
    cols: 120,
    rows: 40,
    cwd: options.cwd ?? repositoryRoot,
    env: { TERM: "xterm-256color", ...environment(options.env) }
  })
  terminals.push(term)
  let output = ""
  let done = false
  const waiting = new Set<() => void>()
  term.onData((data) => {
    output += data
    for (const wake of waiting) wake()
  })
  const exitedWith = new Promise<number>((resolve) =>
    term.onExit(({ exitCode }) => {
      done = true
      for (const wake of waiting) wake()
      resolve(exitCode)
    })
  )
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(output)) {
          waiting.delete(check)
          resolve()
        } else if (done) {
          waiting.delete(check)
          reject(new Error(`exited before ${pattern}: ${output}`))
        }
      }
      waiting.add(check)
      check()
    })
  return { term, exited: exitedWith, waitFor, output: () => output }
}

/** One logfmt line as its fields (quoted values unescaped). */
export const logfmt = (line: string): Record<string, string> => {
  const fields: Record<string, string> = {}
  for (const m of line.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    fields[m[1]!] = m[2]!.startsWith('"') ? JSON.parse(m[2]!) : m[2]!
  }
  return fields
}
