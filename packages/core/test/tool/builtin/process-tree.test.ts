import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ProcessTree } from "../../../src/tool/builtin/process-tree.js"
import {
  freshTag,
  hostExit,
  processesTagged,
  processTreeHost,
  sleeps,
  spared,
  taggedRunning,
  tagLeftovers
} from "./harness.js"

/** Spawns `script` with `sh -c` as a tree, its output ignored. */
const spawnTree = (script: string) => ProcessTree.spawn("/bin/sh", ["-c", script], { stdio: "ignore" })

describe("ProcessTree", () => {
  it.live("finds members that cleared their environment: in the group, and a leader that exec'd env -i", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a, b] = sleeps(tag, 2)
      const { tree } = spawnTree(`env -i sleep ${a} & exec env -i sleep ${b}`)
      yield* taggedRunning(tag, 2)
      // Both have an empty environment: found by the group rule and as the unreaped leader.
      const tagged = processesTagged(tag).map(({ pid }) => pid)
      expect([...ProcessTree.members(tree)].sort()).toEqual(expect.arrayContaining(tagged))
      yield* ProcessTree.terminate(tree, "200 millis")
      expect(ProcessTree.members(tree)).toEqual([])
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )

  it.live("ends a tree that ignores SIGTERM and keeps forking daemons: SIGKILL after the grace, nothing left", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a] = sleeps(tag, 1)
      const { tree } = spawnTree(
        `trap '' TERM; while :; do (setsid sh -c 'trap "" TERM; sleep ${a}' &); sleep 0.01; done`
      )
      yield* taggedRunning(tag, 20)
      // Returning at all means the forking stopped (the loop never ends by itself) and SIGKILL reached
      // every daemon (each ignores SIGTERM for about five minutes): all are dead or doomed at once.
      yield* ProcessTree.terminate(tree, "300 millis")
      expect(ProcessTree.members(tree)).toEqual([])
      expect(spared(tag)).toEqual([])
      expect(yield* tagLeftovers(tag, 200)).toEqual([])
    })
  )

  it.live("terminating a tree with nothing left returns at once, and twice is harmless", () =>
    Effect.gen(function* () {
      const { child, tree } = spawnTree("true")
      yield* Effect.async<void>((resume) => void child.once("exit", () => resume(Effect.void)))
      // A grace longer than the test's timeout: were it waited out, the test would time out.
      yield* ProcessTree.terminate(tree, "1 hour")
      yield* ProcessTree.terminate(tree, "1 hour")
      expect(ProcessTree.members(tree)).toEqual([])
    })
  )

  it.live("a host that exits without terminating its trees kills them on its way out", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a, b] = sleeps(tag, 2)
      const host = processTreeHost(
        [
          `ProcessTree.spawn("/bin/sh", ["-c", ${JSON.stringify(`sleep ${a} & (setsid sleep ${b} &); wait`)}], { stdio: "ignore" })`,
          "setTimeout(() => process.exit(0), 1000)"
        ],
        ["ignore", "ignore", "pipe"]
      )
      expect(yield* hostExit(host, "stderr", tag, 2)).toEqual({ code: 0, output: "" })
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )

  it.live("a leader whose child outlives it is never answered without a scan", () =>
    Effect.gen(function* () {
      const tag = freshTag()
      const [a] = sleeps(tag, 1)
      // The child's pid was handed out after the leader's: at the leader's reap the last pid is not its.
      const { child, tree } = spawnTree(`sleep ${a} & exit 0`)
      yield* Effect.async<void>((resume) => void child.once("exit", () => resume(Effect.void)))
      yield* taggedRunning(tag, 1)
      expect(ProcessTree.withoutScan(tree)).toBeUndefined()
      expect(ProcessTree.members(tree)).toEqual(processesTagged(tag).map(({ pid }) => pid))
      yield* ProcessTree.terminate(tree, "200 millis")
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )
})

describe("ProcessTree.withoutScan", () => {
  const leader = 5000
  const tree = (unreaped: boolean, lastPidAtReap?: number): ProcessTree.Tree => ({
    leader,
    scope: "s",
    unreaped: () => unreaped,
    lastPidAtReap: () => lastPidAtReap
  })
  const now = (lastPid: number | undefined, state: string | undefined): ProcessTree.Counters => ({
    lastPid: () => lastPid,
    stateOf: (pid) => (pid === leader ? state : undefined)
  })

  it("unreaped, with the last pid still the leader's: the leader while it lives, none once it is a zombie", () => {
    expect(ProcessTree.withoutScan(tree(true), now(leader, "S"))).toEqual([leader])
    expect(ProcessTree.withoutScan(tree(true), now(leader, "Z"))).toEqual([])
    // Another pid handed out since, or the last pid unreadable: scan.
    expect(ProcessTree.withoutScan(tree(true), now(leader + 1, "S"))).toBeUndefined()
    expect(ProcessTree.withoutScan(tree(true), now(undefined, "S"))).toBeUndefined()
    // An unreaped leader always has a /proc entry: without one, scan.
    expect(ProcessTree.withoutScan(tree(true), now(leader, undefined))).toBeUndefined()
  })

  it("reaped: none when the last pid at the reap was the leader's, whatever started since; else scan", () => {
    expect(ProcessTree.withoutScan(tree(false, leader), now(leader + 40, undefined))).toEqual([])
    expect(ProcessTree.withoutScan(tree(false, leader + 1), now(leader + 1, undefined))).toBeUndefined()
    expect(ProcessTree.withoutScan(tree(false), now(leader, undefined))).toBeUndefined()
    // Adopted without the reading (a PTY's leader): scan.
    const adopted: ProcessTree.Tree = { leader, scope: "s", unreaped: () => false }
    expect(ProcessTree.withoutScan(adopted, now(leader, undefined))).toBeUndefined()
  })
})
