import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ProcessTree } from "../../../src/tool/builtin/process-tree.js"
import { SpawnHelper } from "../../../src/tool/builtin/spawn-helper.js"
import {
  freshTag,
  hostExit,
  isAlive,
  processesTagged,
  processTreeHost,
  sleeps,
  taggedRunning,
  tagLeftovers
} from "./harness.js"

const here = path.dirname(fileURLToPath(import.meta.url))

/** Starts `script` with `sh -c` through `ProcessTree.spawnCommand`, collecting both streams. */
const start = (script: string) => {
  const { child, tree } = ProcessTree.spawnCommand("/bin/sh", ["-c", script], { cwd: here })
  const output = { stdout: "", stderr: "" }
  child.stdout?.on("data", (chunk: Buffer) => (output.stdout += String(chunk)))
  child.stderr?.on("data", (chunk: Buffer) => (output.stderr += String(chunk)))
  // Listened to from the start: an event may come before the test awaits it.
  const event = <A>(name: "exit" | "close" | "error", value: (...args: Array<any>) => A) => {
    const seen = new Promise<A>((resolve) =>
      child.once(name as "close", (...args: Array<unknown>) => resolve(value(...args)))
    )
    return Effect.promise(() => seen)
  }
  return {
    child,
    tree,
    output,
    exited: event("exit", (code: number | null, signal: string | null) => ({ code, signal })),
    closed: event("close", () => undefined),
    failed: event("error", (error: Error) => error.message)
  }
}

/** The parent pid of `pid` (`/proc/PID/stat` field 4). */
const parentOf = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/** Runs `true` to its end, so that the helper is started (and, after it, a spare is being made). */
const warmHelper = Effect.gen(function* () {
  const warm = start("true")
  yield* warm.closed
  yield* ProcessTree.terminate(warm.tree, "100 millis")
})

const spawned = (tree: ProcessTree.Tree) =>
  Effect.gen(function* () {
    while (tree.pending?.() === true) yield* Effect.sleep("2 millis")
    return tree.leader
  })

describe.runIf(SpawnHelper.available())("SpawnHelper", () => {
  it.live(
    "a command started by the helper streams both outputs, and reports its pid, exit and the last pid at its reap",
    () =>
      Effect.gen(function* () {
        const run = start("echo out; echo err >&2; exit 3")
        const ended = yield* run.exited
        yield* run.closed
        expect(ended).toEqual({ code: 3, signal: null })
        expect(run.output).toEqual({ stdout: "out\n", stderr: "err\n" })
        expect(run.tree.leader).toBeTypeOf("number")
        expect(run.tree.unreaped()).toBe(false)
        // Nothing else started a process here meanwhile in the common case; either way the reading is a pid.
        expect(run.tree.lastPidAtReap?.()).toBeGreaterThanOrEqual(run.tree.leader!)
        yield* ProcessTree.terminate(run.tree, "100 millis")
        expect(ProcessTree.members(run.tree)).toEqual([])
      })
  )

  it.live(
    "close follows the exit once both streams end, whether or not anything read them, as a ChildProcess's does",
    () =>
      Effect.gen(function* () {
        const { child, tree } = ProcessTree.spawnCommand("/bin/sh", ["-c", "echo unread; echo unread >&2"], {
          cwd: here
        })
        const closed = yield* Effect.async<number | null>((resume) => {
          child.once("close", () => resume(Effect.succeed((child as SpawnHelper.Command).exitCode)))
        })
        expect(closed).toBe(0)
        yield* ProcessTree.terminate(tree, "100 millis")
      })
  )

  it.live("a large output arrives whole and in order", () =>
    Effect.gen(function* () {
      const run = start("seq 1 1000000")
      yield* run.exited
      yield* run.closed
      const lines = run.output.stdout.split("\n")
      expect(lines.length).toBe(1_000_001)
      expect(lines.slice(0, 3)).toEqual(["1", "2", "3"])
      expect(lines[999_999]).toBe("1000000")
      yield* ProcessTree.terminate(run.tree, "100 millis")
    })
  )

  it.live("a reader that does not read holds the command back, as a pipe does; once it reads, everything arrives", () =>
    Effect.gen(function* () {
      const { child, tree } = ProcessTree.spawnCommand("/bin/sh", ["-c", "head -c 8000000 /dev/zero"], { cwd: here })
      let exited = false
      child.once("exit", () => (exited = true))
      yield* Effect.sleep("700 millis")
      expect(exited).toBe(false)
      let bytes = 0
      child.stdout?.on("data", (chunk: Buffer) => (bytes += chunk.length))
      yield* Effect.async<void>((resume) => void child.once("close", () => resume(Effect.void)))
      expect({ exited, bytes }).toEqual({ exited: true, bytes: 8_000_000 })
      yield* ProcessTree.terminate(tree, "100 millis")
    })
  )

  it.live(
    "after a command, the next starts on a spare pair of streams made ahead; outputs stay each command's own, spare or not",
    () =>
      Effect.gen(function* () {
        yield* warmHelper
        const ready = () =>
          Effect.gen(function* () {
            for (let i = 0; i < 200 && !SpawnHelper.spareReady(); i++) yield* Effect.sleep("5 millis")
            return SpawnHelper.spareReady()
          })
        expect(yield* ready()).toBe(true)
        // One after another: each takes the spare its predecessor left, and the helper makes the next.
        for (let i = 0; i < 5; i++) {
          const run = start(`echo out ${i}; echo err ${i} >&2; exit ${i}`)
          expect(SpawnHelper.spareReady()).toBe(false)
          expect(yield* run.exited).toEqual({ code: i, signal: null })
          yield* run.closed
          expect(run.output).toEqual({ stdout: `out ${i}\n`, stderr: `err ${i}\n` })
          yield* ProcessTree.terminate(run.tree, "100 millis")
          expect(yield* ready()).toBe(true)
        }
        // At once: the first takes the spare, the others connect their own streams.
        const runs = Array.from({ length: 6 }, (_, i) => start(`seq ${i} 3 30000; echo done ${i} >&2`))
        for (const [i, run] of runs.entries()) {
          yield* run.closed
          const lines = run.output.stdout.trim().split("\n")
          expect(lines[0]).toBe(String(i))
          expect(lines.at(-1)).toBe(String(i + 3 * Math.floor((30000 - i) / 3)))
          expect(run.output.stderr).toBe(`done ${i}\n`)
          yield* ProcessTree.terminate(run.tree, "100 millis")
        }
      })
  )

  it.live("a host whose commands are done exits by itself, though its helper holds a spare pair open", () =>
    Effect.gen(function* () {
      const host = processTreeHost(
        [
          'const first = ProcessTree.spawnCommand("/bin/sh", ["-c", "true"], {})',
          "first.child.stdout.resume()",
          "first.child.stderr.resume()",
          'first.child.once("close", () => setTimeout(() => {',
          "  const spare = SpawnHelper.spareReady()",
          '  const { child } = ProcessTree.spawnCommand("/bin/sh", ["-c", "echo started"], {})',
          '  let output = ""',
          '  child.stdout.on("data", (chunk) => (output += chunk))',
          "  child.stderr.resume()",
          '  child.once("close", () => {',
          "    // Once the helper has its next spare ready, the host has nothing left to do.",
          "    const poll = setInterval(() => {",
          "      if (!SpawnHelper.spareReady()) return",
          "      clearInterval(poll)",
          "      process.stdout.write(JSON.stringify({ spare, output }))",
          "    }, 5)",
          "  })",
          "}, 300))"
        ],
        ["ignore", "pipe", "inherit"]
      )
      let output = ""
      host.stdout!.on("data", (chunk) => (output += String(chunk)))
      // Nothing else keeps it alive: it exits once the second command has closed (a spare left open
      // would hold it here until the test's timeout).
      const code = yield* Effect.async<number | null>((resume) => {
        host.once("exit", (exit) => resume(Effect.succeed(exit)))
      })
      expect({ code, output: JSON.parse(output) }).toEqual({
        code: 0,
        output: { spare: true, output: "started\n" }
      })
    })
  )

  it.live("the command is the helper's child, not the host's: the host never forks for it", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a] = sleeps(tag, 1)
      const run = start(`exec sleep ${a}`)
      const leader = yield* spawned(run.tree)
      yield* taggedRunning(tag, 1)
      expect(parentOf(leader!)).toBe(SpawnHelper.helperPid())
      expect(parentOf(leader!)).not.toBe(process.pid)
      yield* ProcessTree.terminate(run.tree, "200 millis")
      expect((yield* run.exited).signal).toBe("SIGTERM")
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )

  it.live(
    "output written by a background job after the command exited still arrives, and ends when the job closes it",
    () =>
      Effect.gen(function* () {
        const run = start("(sleep 0.3; echo late) & echo early")
        expect(yield* run.exited).toEqual({ code: 0, signal: null })
        yield* run.closed
        expect(run.output.stdout).toBe("early\nlate\n")
        yield* ProcessTree.terminate(run.tree, "100 millis")
      })
  )

  it.live("terminated before its pid arrived, a command is still found and killed: nothing is left", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a, b] = sleeps(tag, 2)
      const run = start(`sleep ${a} & sleep ${b}`)
      expect(run.tree.pending?.()).toBe(true)
      yield* ProcessTree.terminate(run.tree, "300 millis")
      expect(run.tree.leader).toBeTypeOf("number")
      expect(yield* tagLeftovers(tag)).toEqual([])
      expect(ProcessTree.members(run.tree)).toEqual([])
    })
  )

  it.live(
    "a helper that stops fails its running commands; their trees are found by their scope and killed, and the next command starts a new helper",
    () =>
      Effect.gen(function* () {
        const tag = freshTag()
        const [a, b] = sleeps(tag, 2)
        const run = start(`sleep ${a} & (setsid sleep ${b} &); wait`)
        yield* spawned(run.tree)
        yield* taggedRunning(tag, 2)
        const first = SpawnHelper.helperPid()!
        process.kill(first, "SIGKILL")
        expect(yield* run.failed).toBe("the helper that started the command stopped")
        // The helper's death reparented the leader: its pid is no longer taken for the tree's without a look.
        expect(run.tree.unreaped()).toBe(false)
        expect(processesTagged(tag).length).toBeGreaterThanOrEqual(2)
        yield* ProcessTree.terminate(run.tree, "200 millis")
        expect(yield* tagLeftovers(tag)).toEqual([])

        const next = start("echo again")
        expect(yield* next.exited).toEqual({ code: 0, signal: null })
        yield* next.closed
        expect(next.output.stdout).toBe("again\n")
        expect(SpawnHelper.helperPid()).not.toBe(first)
        yield* ProcessTree.terminate(next.tree, "100 millis")
      })
  )

  it.live(
    "a helper that does not answer is stopped by terminate within its grace, and what it was asked to start never runs",
    () =>
      Effect.gen(function* () {
        yield* warmHelper
        const frozen = SpawnHelper.helperPid()!
        process.kill(frozen, "SIGSTOP")
        const tag = freshTag()
        const [a] = sleeps(tag, 1)
        const run = start(`sleep ${a}`)
        const began = Date.now()
        yield* ProcessTree.terminate(run.tree, "300 millis")
        expect(Date.now() - began).toBeLessThan(5_000)
        expect(yield* run.failed).toBe("the helper that started the command stopped")
        expect(run.tree.lost?.()).toBe(true)
        expect(isAlive(frozen)).toBe(false)
        expect(yield* tagLeftovers(tag, 300)).toEqual([])
      })
  )

  it.live(
    "a Ctrl-C or a stop for the host's group does not stop the helper: the host decides when its commands end",
    () =>
      Effect.gen(function* () {
        const tag = freshTag()
        const [a] = sleeps(tag, 1)
        const run = start(`exec sleep ${a}`)
        yield* spawned(run.tree)
        const pid = SpawnHelper.helperPid()!
        for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.kill(pid, name)
        yield* Effect.sleep("200 millis")
        expect(isAlive(pid)).toBe(true)
        expect(processesTagged(tag)).toHaveLength(1)
        yield* ProcessTree.terminate(run.tree, "200 millis")
        expect(yield* run.exited).toEqual({ code: null, signal: "SIGTERM" })
        expect(SpawnHelper.helperPid()).toBe(pid)
      })
  )

  it.live(
    "a command lost with its helper (no pid ever arrived) is still killed, by its scope id, when the host exits",
    () =>
      Effect.gen(function* () {
        const tag = freshTag()
        const [a] = sleeps(tag, 1)
        // The host freezes its helper, asks it for a command, and kills it: the command is lost. A
        // process of the command's scope stands in for the leader the helper might have started.
        const host = processTreeHost(
          [
            'import * as childProcess from "node:child_process"',
            'const warm = ProcessTree.spawnCommand("/bin/sh", ["-c", "true"], {})',
            'warm.child.once("close", () => {',
            "  const helper = SpawnHelper.helperPid()",
            '  process.kill(helper, "SIGSTOP")',
            '  const { child, tree } = ProcessTree.spawnCommand("/bin/sh", ["-c", "true"], {})',
            '  child.once("error", () => {',
            "    process.stdout.write(JSON.stringify({ lost: tree.lost() }))",
            `    const env = { ...process.env, ${ProcessTree.scopeVariable}: tree.scope }`,
            `    childProcess.spawn("sleep", [${JSON.stringify(a)}], { detached: true, stdio: "ignore", env }).unref()`,
            "    setTimeout(() => process.exit(0), 1000)",
            "  })",
            '  process.kill(helper, "SIGKILL")',
            "})",
            "setInterval(() => {}, 1000)"
          ],
          ["ignore", "pipe", "inherit"]
        )
        expect(yield* hostExit(host, "stdout", tag, 1)).toEqual({ code: 0, output: JSON.stringify({ lost: true }) })
        expect(yield* tagLeftovers(tag)).toEqual([])
      })
  )

  it.live("a host that is SIGKILLed takes the commands it was running with it", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a, b] = sleeps(tag, 2)
      const host = processTreeHost(
        [
          `ProcessTree.spawnCommand("/bin/sh", ["-c", ${JSON.stringify(`sleep ${a} & sleep ${b}; wait`)}], {})`,
          "setInterval(() => {}, 1000)"
        ],
        "ignore"
      )
      yield* taggedRunning(tag, 2)
      host.kill("SIGKILL")
      // The helper sees its channel close and SIGKILLs the command's process group.
      expect(yield* tagLeftovers(tag, 5_000)).toEqual([])
    })
  )
})
