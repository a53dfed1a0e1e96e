import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { NodeContext } from "@effect/platform-node"
import { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"
import { BuiltinTools } from "../../../src/tool/builtin/builtin-tools.js"
import { ToolRegistry } from "../../../src/tool/tool-registry.js"

/** A fresh real directory (symlinks resolved, so paths compare as the tools print them). */
export const tempDir = (prefix = "opencode-builtin-") => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))

/** A project directory with the given files (relative path → content), plus a sibling outside it. */
export const project = (files: Record<string, string | Uint8Array> = {}) => {
  const root = tempDir()
  const directory = path.join(root, "project")
  const outside = path.join(root, "outside")
  fs.mkdirSync(directory)
  fs.mkdirSync(outside)
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(directory, name)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
  return { root, directory, outside, file: (name: string) => path.join(directory, name) }
}

export type Answer = "allow" | "deny"

/**
 * A call context over `directory` whose `ask` records each request and answers it with `answer`
 * (allow everything by default), and whose `progress` records each update.
 */
export const context = (directory: string, answer: (request: ToolRegistry.PermissionAsk) => Answer = () => "allow") => {
  const asks: Array<ToolRegistry.PermissionAsk> = []
  const progress: Array<ToolRegistry.Result> = []
  const ctx: ToolRegistry.CallContext = {
    sessionID: Identifier.SessionID.make("ses_test"),
    callID: "call_test",
    agent: "build",
    directory,
    ask: (request) =>
      Effect.suspend(() => {
        asks.push(request)
        return answer(request) === "allow"
          ? Effect.void
          : Effect.fail(
              new ToolRegistry.ToolFailure({
                message: `Permission denied: ${request.action} ${request.resources.join(", ")}`
              })
            )
      }),
    progress: (update) => Effect.sync(() => void progress.push(update))
  }
  return { ctx, asks, progress }
}

/** The built-in tool named `name`. */
export const tool = (name: (typeof BuiltinTools.names)[number], options: BuiltinTools.Options = {}) =>
  BuiltinTools.make(options).pipe(
    Effect.map((tools) => tools.find((t) => t.name === name)!),
    Effect.provide(NodeContext.layer)
  )

/** Runs the built-in `name` with `input`: its result, or its failure's message as a Left. */
export const call = (
  name: (typeof BuiltinTools.names)[number],
  input: Record<string, unknown>,
  ctx: ToolRegistry.CallContext,
  options: BuiltinTools.Options = {}
) => Effect.flatMap(tool(name, options), (t) => t.execute(input, ctx))

/** The text of a result's text parts. */
export const textOf = (result: ToolRegistry.Result) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n")

/** Runs a call expected to fail: its failure's message. */
export const failure = (effect: Effect.Effect<unknown, ToolRegistry.ToolFailure>) =>
  Effect.flip(effect).pipe(Effect.map((failure) => failure.message))

/**
 * Whether a process is still alive. A zombie (dead, not yet reaped: this machine's init does not
 * reap orphans) counts as dead.
 */
export const isAlive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
    return state !== "Z" && state !== "X"
  } catch {
    if (fs.existsSync("/proc/self/stat")) return false
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
}

/** Waits (up to `ms`) until every pid is dead; the pids still alive then. */
export const survivors = (pids: ReadonlyArray<number>, ms = 3000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      if (pids.every((pid) => !isAlive(pid))) return []
      yield* Effect.sleep("25 millis")
    }
    return pids.filter(isAlive)
  })

/** The pids still alive after `ms`, which are then killed so a failing test leaves nothing behind. */
export const reap = (pids: ReadonlyArray<number>, ms?: number) =>
  Effect.tap(survivors(pids, ms), (left) =>
    Effect.sync(() => {
      for (const pid of left) process.kill(pid, "SIGKILL")
    })
  )

/** Reads the pids a command wrote to `file`, once it holds `count` of them. */
export const pidsIn = (file: string, count: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      const pids = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split(/\s+/).filter(Boolean).map(Number) : []
      if (pids.length >= count) return pids
      yield* Effect.sleep("25 millis")
    }
    throw new Error(`the command never wrote ${count} pids to ${file}`)
  })

/**
 * A command whose process group holds the shell, two background `sleep`s (grandchildren of the tool)
 * and one `sleep` that ignores SIGTERM; it records their pids (and its own) in `pids`, then waits.
 */
export const stubborn = (pids: string) =>
  [
    `sleep 1000 & echo $! >> ${pids}`,
    `sleep 1000 & echo $! >> ${pids}`,
    `(trap '' TERM; exec sleep 1000) & echo $! >> ${pids}`,
    `echo $$ >> ${pids}`,
    "wait"
  ].join("; ")

/**
 * Runs `effect` while a 10 ms interval timer counts event-loop turns: the effect's outcome (as an
 * Exit) and `ticks`, how many times the timer fired while `only()` held. A main thread blocked by the
 * work (a regex matched in place, a synchronous wait) lets no tick fire, however fast the machine is;
 * a free one ticks many times over any stretch of work that lasts a while, however loaded the machine
 * is. `effect` gets the count so far, to wait for the loop to turn while the work is still going on.
 */
export const loopTurnsDuring = <A, E>(effect: (ticks: () => number) => Effect.Effect<A, E>, only: () => boolean) =>
  Effect.gen(function* () {
    let ticks = 0
    const timer = setInterval(() => {
      if (only()) ticks++
    }, 10)
    const exit = yield* Effect.exit(effect(() => ticks)).pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
    return { exit, ticks }
  })

/**
 * A fresh random tag for `sleep` durations (`sleeps(tag)`), so a test finds exactly its own processes
 * with `ps` (`processesTagged`), whatever else runs on the machine.
 */
export const freshTag = () => String(100_000 + Math.floor(Math.random() * 900_000))

/** `count` distinct `sleep` durations of about five minutes, each ending in `.tag`. */
export const sleeps = (tag: string, count: number) => Array.from({ length: count }, (_, i) => `3${i}1.${tag}`)

/**
 * The live processes (`ps -eo pid,stat,args`, zombies ignored: this machine's init reaps orphans
 * late) whose command line mentions `.tag`.
 */
export const processesTagged = (tag: string): Array<{ pid: number; args: string }> =>
  childProcess
    .execFileSync("ps", ["-eo", "pid=,stat=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .filter((match) => !match[2]!.startsWith("Z") && match[3]!.includes(`.${tag}`))
    .map((match) => ({ pid: Number(match[1]), args: match[3]! }))

/**
 * A host process: Node (through tsx) that imports this checkout's ProcessTree and SpawnHelper and
 * runs `lines` after that, for the tests that watch what a host's exit or death does to the commands
 * it started.
 */
export const processTreeHost = (lines: ReadonlyArray<string>, stdio: childProcess.StdioOptions) => {
  const module = (name: string) =>
    JSON.stringify(fileURLToPath(new URL(`../../../src/tool/builtin/${name}.ts`, import.meta.url)))
  const script = [
    `import { ProcessTree } from ${module("process-tree")}`,
    `import { SpawnHelper } from ${module("spawn-helper")}`,
    ...lines
  ].join("\n")
  return childProcess.spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio })
}

/**
 * Lets a host process (see {@link processTreeHost}) run until it exits, once `count` processes tagged
 * `tag` are alive: its exit code and everything it wrote on `stream` (piped).
 */
export const hostExit = (host: childProcess.ChildProcess, stream: "stdout" | "stderr", tag: string, count: number) =>
  Effect.gen(function* () {
    let output = ""
    host[stream]!.on("data", (chunk) => (output += String(chunk)))
    yield* taggedRunning(tag, count)
    const code = yield* Effect.async<number | null>((resume) => {
      if (host.exitCode !== null) return resume(Effect.succeed(host.exitCode))
      host.once("exit", (exit) => resume(Effect.succeed(exit)))
    })
    return { code, output }
  })

/** Waits until at least `count` processes tagged `tag` are alive (the command has started them all). */
export const taggedRunning = (tag: string, count: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      if (processesTagged(tag).length >= count) return
      yield* Effect.sleep("25 millis")
    }
    throw new Error(`fewer than ${count} processes tagged ${tag} ever ran: ${JSON.stringify(processesTagged(tag))}`)
  })

/**
 * The processes tagged `tag` still alive after up to `ms` (normally none: the tool killed them before
 * it returned, and the kernel needs a moment at most); any found are then killed so a failing test
 * leaves nothing behind.
 */
export const tagLeftovers = (tag: string, ms = 1000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + ms
    let left = processesTagged(tag)
    while (left.length > 0 && Date.now() < deadline) {
      yield* Effect.sleep("25 millis")
      left = processesTagged(tag)
    }
    for (const { pid } of left) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
    return left.map(({ args }) => args)
  })

/**
 * A command that starts, each tagged with one of `sleeps(tag, 5)`: a background job, a `nohup` job,
 * a `setsid` job (a new session), a double-forked `setsid` job whose parent exits at once (reparented
 * to init, outside the tool's group, session and process tree), and a background job that ignores
 * SIGTERM; then runs `tail`.
 */
export const escapees = (tag: string, tail: string) => {
  const [a, b, c, d, e] = sleeps(tag, 5)
  return [
    `sleep ${a} &`,
    `nohup sleep ${b} >/dev/null 2>&1 &`,
    `setsid sleep ${c} &`,
    `(setsid sh -c 'sleep ${d}; true' &)`,
    `(trap '' TERM; exec sleep ${e}) &`,
    tail
  ].join("\n")
}

/** SIGKILL's bit in /proc's pending-signal masks. */
const sigkillBit = 1n << 8n
/** The kernel's PF_EXITING task flag (/proc/<pid>/stat field 9): the process is on its way out. */
const exitingFlag = 0x4

/**
 * Whether `pid` is dead or already doomed: gone, a zombie, exiting, or with SIGKILL pending (the
 * kernel marks every fatal signal it delivers so, until the process runs and exits). Read from /proc at
 * this instant, with no waiting, so it tells "killed before the call returned" apart from "killed
 * later", however slow the machine.
 */
export const doomed = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (fields[0] === "Z" || fields[0] === "X" || (Number(fields[6]) & exitingFlag) !== 0) return true
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const mask = (name: string) => {
      const match = new RegExp(`^${name}:\\s*([0-9a-f]+)$`, "m").exec(status)
      return match === null ? 0n : BigInt(`0x${match[1]}`)
    }
    return ((mask("SigPnd") | mask("ShdPnd")) & sigkillBit) !== 0n
  } catch {
    return true
  }
}

/** The command lines of the processes tagged `tag` that are neither dead nor doomed (see `doomed`) right now. */
export const spared = (tag: string) =>
  processesTagged(tag)
    .filter(({ pid }) => !doomed(pid))
    .map(({ args }) => args)
