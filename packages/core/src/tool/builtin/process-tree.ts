export * as ProcessTree from "./process-tree.js"

import * as childProcess from "node:child_process"
import * as crypto from "node:crypto"
import * as nodeFs from "node:fs"
import type { Readable } from "node:stream"
import { Duration, Effect } from "effect"
import { SpawnHelper } from "./spawn-helper.js"

/**
 * A Process Tree is everything one spawned command started, however it tried to leave: background
 * jobs, `nohup` jobs, `setsid` jobs, double-forked daemons reparented to init. `terminate` kills all
 * of it, and nothing a command does can make `terminate` wait past its bound.
 *
 * **Membership** (Linux, read from `/proc`), a process belongs to the tree when any of these holds:
 * - its environment carries the tree's scope id in `OPENCODE_PROCESS_SCOPE`. Every descendant
 *   inherits the environment, and `setsid`, `nohup`, `disown` and double forks keep it, so this is
 *   what finds a daemon whose parent exited (its ppid is then 1, or the nearest sub-reaper);
 * - its process group or session is the spawned leader's (it is spawned detached, so it leads both);
 *   this finds a descendant that cleared its environment (`env -i`) but did not call `setsid`;
 * - its parent is a member (the ppid walk); this finds a child of a member that cleared its
 *   environment and left the session, as long as its parent is still alive.
 * Zombies (state `Z` in `/proc/PID/stat`) are dead and never members: this machine's PID 1 reaps
 * orphans late, so a killed process lingers as a zombie that `kill(pid, 0)` still reports alive.
 * What escapes: a process that clears its environment, calls `setsid` and whose parent exited before
 * a scan saw it; only a cgroup would catch that.
 *
 * **Why this mechanism** (measured on the Linux 6.18 machine this was built on, Node 20):
 * - cgroup v2: mounted at `/sys/fs/cgroup/unified` (hybrid layout), its directories owned by root
 *   with mode 0555; `mkdir` there as `nobody` fails with EACCES. An unprivileged server (the normal
 *   case) cannot create cgroups unless systemd delegates a user slice, so it cannot be the mechanism.
 * - `prctl(PR_SET_CHILD_SUBREAPER)`: no package in the npm registry index here offers it (searched
 *   for prctl, subreaper, reaper, pdeathsig), and an FFI addon would need a build; Node's libuv also
 *   reaps only the children it spawned, so reparented orphans would pile up as zombies of the server.
 * - a `/proc` walk by ppid alone loses a daemon as soon as its middle parent exits (the
 *   `(setsid cmd &)` case: its ppid becomes 1). The environment marker does not: it holds across
 *   `setsid`, `nohup` and reparenting, needs no privilege (`/proc/PID/environ` is readable for one's
 *   own processes), and a scan of `/proc` (stat, plus environ where stat did not decide) took about
 *   10 ms for 85 processes.
 *
 * **Without a scan:** a short command that starts nothing (`cat`, `ls`, `git status`) is the common
 * case, and a scan reads every process's `stat`: about 13 µs each here, so a few milliseconds at every
 * call's end on a desktop running hundreds of processes. The kernel's last handed-out pid in this
 * namespace (`/proc/sys/kernel/ns_last_pid`) tells when nothing can have started since the leader: a
 * pid is never handed out while a process (a zombie included) holds it, so while the host has not
 * reaped the leader, a last pid that is still the leader's means no process or thread has started
 * since, and the leader has no descendant. {@link spawn} also reads it as the host reaps the leader
 * (its first `exit` listener, in the same call as Node's `waitpid`): if it is the leader's then, the
 * leader died with no descendant, and a dead process starts nothing, so the tree stays empty. What
 * this misses is the counter going once round all `pid_max` values (a wrap, back to 300) between the
 * reap and that reading, and stopping on the leader's freed pid: tens of thousands of pids handed out
 * in microseconds, one at a time under the kernel's lock. Anything else (another process started
 * meanwhile, a file that cannot be read, a leader {@link adopt}ed without the reading) means a scan.
 *
 * **Pid reuse:** the kernel never reuses a pid that names a live group or session, and the host's
 * own unreaped child keeps its pid. So the leader counts, and the group and session rules apply,
 * while the host has not reaped the leader; after that, only while no live process holds the
 * leader's pid or the one that does carries the scope id (another holder means the group is gone).
 *
 * **Other systems** (no `/proc`, e.g. macOS): membership is the process group only, and `terminate`
 * signals the group; a `setsid` job escapes there.
 *
 * **Host exit:** trees still alive when the Node process exits (`process.exit`, the end of the event
 * loop) are SIGKILLed synchronously from an `exit` handler, lost ones (see Tree.lost) found by their
 * scope id. A host that is SIGKILLed itself runs
 * nothing: trees it spawned itself keep running, while the Spawn Helper kills the process group of
 * each command it started ({@link spawnCommand}) when the host's channel closes.
 *
 * **Started by the Spawn Helper** ({@link spawnCommand}, Linux): the helper, not the host, is the
 * leader's parent and reaps it, and the host learns the pid, the reap and the last pid at the reap
 * one message later. Until the pid arrives the tree is `pending`, and {@link terminate} waits for it
 * first. The pid-reuse rule below then reads "while the helper has not reported the reap", which
 * adds one case to the wrap above: the counter going round within that message's delivery.
 */

/** The environment variable that carries the scope ids of every tree a process belongs to. */
export const scopeVariable = "OPENCODE_PROCESS_SCOPE"

export interface Tree {
  /** The spawned process's pid: it leads a new session and process group. Undefined if spawn failed. */
  readonly leader: number | undefined
  /** The random id in `OPENCODE_PROCESS_SCOPE` of every process of this tree. */
  readonly scope: string
  /** Whether the host has not yet reaped the leader (so its pid, alive or zombie, is still the leader's). */
  readonly unreaped: () => boolean
  /**
   * The kernel's last handed-out pid, read as the host reaped the leader (undefined before, or where it
   * was not read): see "Without a scan". A tree without it is always scanned once its leader is reaped.
   */
  readonly lastPidAtReap?: (() => number | undefined) | undefined
  /** Whether the leader's start has not settled yet (a helper is starting it): its pid is not known. */
  readonly pending?: (() => boolean) | undefined
  /**
   * Whether the leader may have started while its pid never became known (its helper stopped first):
   * only the scope id finds the tree then.
   */
  readonly lost?: (() => boolean) | undefined
}

/** Trees spawned and not yet terminated, killed synchronously if the host exits first. */
const live = new Set<Tree>()
let exitHookInstalled = false
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once("exit", () => {
    for (const tree of live) killNow(tree)
  })
}

/**
 * Spawns `file` with `args` as the leader of a new tree: detached (a new session and process group),
 * its environment (`options.env`, default `process.env`) extended with the tree's scope id. A scope
 * id already there (a server run inside another's tool) is kept, so the outer tree still finds it.
 */
export const spawn = (
  file: string,
  args: ReadonlyArray<string>,
  options: Omit<childProcess.SpawnOptions, "detached">
): { readonly child: childProcess.ChildProcess; readonly tree: Tree } => {
  const { scope, env } = scoped(options.env ?? process.env)
  const child = childProcess.spawn(file, args, { ...options, env, detached: true })
  let lastPidAtReap: number | undefined
  // The first `exit` listener: Node emits `exit` in the same call as it reaps the child.
  child.once("exit", () => {
    lastPidAtReap = hasProc() ? lastPid() : undefined
  })
  const tree = adopt({
    leader: child.pid,
    scope,
    unreaped: () => child.exitCode === null && child.signalCode === null,
    lastPidAtReap: () => lastPidAtReap
  })
  return { child, tree }
}

/** What a command started by {@link spawnCommand} is seen through: a `ChildProcess`, or the Spawn Helper's `Command`. */
export interface CommandProcess {
  readonly stdout: Readable | null
  readonly stderr: Readable | null
  once(event: "error", listener: (error: Error) => void): this
  once(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): this
  once(event: "close", listener: () => void): this
}

/**
 * Starts `file` with `args` as the leader of a new tree, as {@link spawn} does with stdin ignored and
 * stdout and stderr piped, through the Spawn Helper where it runs (so the host does not fork: see
 * `spawn-helper.ts`), else by the host itself. A tree started through the helper is {@link adopt}ed
 * when its pid arrives; {@link terminate} waits for that first.
 */
export const spawnCommand = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string | undefined; readonly env?: NodeJS.ProcessEnv | undefined }
): { readonly child: CommandProcess; readonly tree: Tree } => {
  if (SpawnHelper.available()) {
    const { scope, env } = scoped(options.env ?? process.env)
    const command = SpawnHelper.spawn(file, args, { cwd: options.cwd, env })
    if (command !== undefined) return { child: command, tree: helperTree(command, scope) }
  }
  return spawn(file, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
}

/** The tree led by `command`, a leader the Spawn Helper is starting: adopted when its pid arrives. */
const helperTree = (command: SpawnHelper.Command, scope: string): Tree => {
  const tree: Tree = {
    get leader() {
      return command.pid
    },
    scope,
    unreaped: () => command.pid !== undefined && !command.reaped,
    lastPidAtReap: () => command.lastPidAtReap,
    pending: () => !command.settled,
    lost: () => command.lost
  }
  command.once("spawned", () => adopt(tree, command.started))
  // Lost: its helper stopped before the pid arrived, so the leader may run unseen; the host's exit
  // still kills it, by its scope id.
  command.once("error", () => {
    if (command.lost) adopt(tree)
  })
  return tree
}

/**
 * A new scope id and `env` extended with it (an outer scope id already there is kept), for a leader
 * that something other than {@link spawn} starts (a PTY: node-pty makes its program a session leader).
 */
export const scoped = (
  env: Readonly<Record<string, string | undefined>>
): { readonly scope: string; readonly env: Record<string, string> } => {
  const scope = crypto.randomUUID()
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value
  const outer = out[scopeVariable]
  out[scopeVariable] = outer === undefined || outer === "" ? scope : `${outer} ${scope}`
  return { scope, env: out }
}

/**
 * Takes `tree` (its leader started with the environment of {@link scoped}, leading its own session
 * and process group) into the host's care: until it is terminated, the host's exit kills it.
 * `started` is when the leader started, if whoever spawned it read it (else it is read here).
 */
export const adopt = (tree: Tree, started?: number): Tree => {
  // A lost tree (see Tree.lost) is taken in too, and found by its scope id alone.
  if (tree.leader === undefined && tree.lost?.() !== true) return tree
  installExitHook()
  live.add(tree)
  if (tree.leader === undefined) return tree
  if (started !== undefined) leaderStarted.set(tree, started)
  // Read while the host has not reaped the leader, so the pid is surely the leader's.
  else if (hasProc() && tree.unreaped()) {
    const started = readStat(tree.leader)?.started
    if (started !== undefined) leaderStarted.set(tree, started)
  }
  return tree
}

/**
 * When each tree's leader started (`/proc/PID/stat` field 22, clock ticks since boot). Every member
 * is the leader or a descendant of it, so none started before it: a scan reads the environment of
 * younger processes only, not of every long-running process on the machine.
 */
const leaderStarted = new WeakMap<Tree, number>()

const hasProc = (() => {
  let known: boolean | undefined
  return () => {
    known ??= nodeFs.existsSync("/proc/self/stat")
    return known
  }
})()

/** The kernel's last handed-out pid in this pid namespace, or undefined where it cannot be read. */
const lastPid = (): number | undefined => {
  try {
    const value = Number.parseInt(nodeFs.readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"), 10)
    return Number.isInteger(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** What {@link withoutScan} reads now: the last pid, and a process's state letter (undefined: no such process). */
export interface Counters {
  readonly lastPid: () => number | undefined
  readonly stateOf: (pid: number) => string | undefined
}

const counters: Counters = { lastPid, stateOf: (pid) => readStat(pid)?.state }

/**
 * The members of `tree` found without a scan of `/proc` (see "Without a scan" above), or undefined
 * when a scan is needed. Unreaped, with the last pid still the leader's: the leader alone while it is
 * alive, none once it is a zombie. Reaped, with the last pid at the reap the leader's: none. Whatever
 * contradicts that (an unreaped leader without a `/proc` entry) means a scan.
 */
export const withoutScan = (tree: Tree, read: Counters = counters): ReadonlyArray<number> | undefined => {
  const leader = tree.leader
  if (leader === undefined) return undefined
  if (!tree.unreaped()) return tree.lastPidAtReap?.() === leader ? [] : undefined
  if (read.lastPid() !== leader) return undefined
  const state = read.stateOf(leader)
  if (state === undefined) return undefined
  return isGone(state) ? [] : [leader]
}

interface Stat {
  readonly pid: number
  readonly state: string
  readonly ppid: number
  readonly pgrp: number
  readonly session: number
  /** Field 22: when the process started, in clock ticks since boot. */
  readonly started: number
}

const readStat = (pid: number): Stat | undefined => {
  try {
    const text = nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return {
      pid,
      state: fields[0] ?? "",
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      session: Number(fields[3]),
      started: Number(fields[19])
    }
  } catch {
    return undefined // gone meanwhile
  }
}

/** Whether `pid`'s environment carries `scope` in `OPENCODE_PROCESS_SCOPE`. */
const carries = (pid: number, scope: string): boolean => {
  let environ: Buffer
  try {
    environ = nodeFs.readFileSync(`/proc/${pid}/environ`)
  } catch {
    return false // gone, a kernel thread, or another user's
  }
  if (!environ.includes(scope)) return false
  const prefix = `${scopeVariable}=`
  return environ
    .toString("utf8")
    .split("\0")
    .some((entry) => entry.startsWith(prefix) && entry.slice(prefix.length).split(" ").includes(scope))
}

const isGone = (state: string) => state === "Z" || state === "X" || state === "x"
const gone = (stat: Stat) => isGone(stat.state)

/**
 * The live members of `tree` (Linux), by the rules above; on a system without `/proc`, the leader
 * alone while its process group has any process. The host itself is never a member.
 */
export const members = (tree: Tree): ReadonlyArray<number> => {
  const leader = tree.leader
  if (leader === undefined) return tree.lost?.() === true && hasProc() ? scan(tree, undefined) : []
  if (!hasProc()) return groupAlive(leader) ? [leader] : []
  return withoutScan(tree) ?? scan(tree, leader)
}

/** The members of `tree` by a scan of `/proc`; without a `leader` (a lost one), by the scope id alone. */
const scan = (tree: Tree, leader: number | undefined): ReadonlyArray<number> => {
  const stats: Array<Stat> = []
  const since = leaderStarted.get(tree) ?? Number.NEGATIVE_INFINITY
  for (const name of nodeFs.readdirSync("/proc")) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue
    const stat = readStat(pid)
    // Older than the leader: neither a member nor the parent of one (a leader pid reused by an
    // older process stays out too, which is right: it is not the leader).
    if (stat !== undefined && !gone(stat) && !(stat.started < since)) stats.push(stat)
  }
  const holder = stats.find((stat) => stat.pid === leader)
  // Until the host reaps the leader its pid cannot be reused, so the group and session are the
  // tree's even if the leader exec'd with an empty environment (it stays in them: a session leader
  // cannot leave its group); after that, a live process holding its pid must carry the scope.
  const ownsGroup = leader !== undefined && (tree.unreaped() || holder === undefined || carries(leader, tree.scope))
  const found = new Set<number>()
  for (const stat of stats) {
    if ((ownsGroup && (stat.pgrp === leader || stat.session === leader)) || carries(stat.pid, tree.scope)) {
      found.add(stat.pid)
    }
  }
  // The ppid walk: children of members, to a fixed point.
  let grew = found.size > 0
  while (grew) {
    grew = false
    for (const stat of stats) {
      if (!found.has(stat.pid) && found.has(stat.ppid)) {
        found.add(stat.pid)
        grew = true
      }
    }
  }
  return [...found]
}

const groupAlive = (leader: number) => {
  try {
    process.kill(-leader, 0)
    return true
  } catch {
    return false
  }
}

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name)
  } catch {
    // ESRCH: already gone.
  }
}

/** Sends `name` to every member (Linux), or to the leader's process group (elsewhere). */
const signalAll = (tree: Tree, pids: ReadonlyArray<number>, name: NodeJS.Signals) => {
  if (!hasProc()) return tree.leader === undefined ? undefined : signal(-tree.leader, name)
  for (const pid of pids) signal(pid, name)
}

/**
 * SIGKILLs every member now. Each scan's new members are stopped first (SIGSTOP), so none can fork
 * behind the scan, until a scan finds no new one; then all of them are killed.
 */
const killNow = (tree: Tree) => {
  if (!hasProc()) return tree.leader === undefined ? undefined : signal(-tree.leader, "SIGKILL")
  const stopped = new Set<number>()
  for (let round = 0; round < 100; round++) {
    const fresh = members(tree).filter((pid) => !stopped.has(pid))
    if (fresh.length === 0) break
    for (const pid of fresh) {
      signal(pid, "SIGSTOP")
      stopped.add(pid)
    }
  }
  for (const pid of stopped) signal(pid, "SIGKILL")
}

const pollInterval = Duration.millis(20)
/** How often {@link terminate} looks whether a leader being started has its pid (the helper answers within a millisecond or so). */
const startPollInterval = Duration.millis(2)

/**
 * Ends the tree: SIGTERM to every member, up to `grace` for them to exit, then SIGKILL to whatever
 * is left, repeated until a scan finds no member (or a second has passed: a process the kernel
 * cannot kill, e.g. in uninterruptible I/O, is left, and reported nowhere).
 *
 * - **Bounded:** it returns within about `grace` + 1 s whatever the tree does (ignoring SIGTERM,
 *   forking, re-spawning). Its waits are plain sleeps, not timeouts around something that must be
 *   interrupted, so it keeps its bound inside an uninterruptible region such as a release.
 * - **Idempotent:** with no member left it returns at once; a tree with no members never waits.
 * - Never fails. Once it returns, the host's exit no longer concerns the tree.
 * - **A leader still being started** (by the Spawn Helper): it first waits for its pid, within the
 *   same `grace`; a helper that has not answered by then is stopped (SIGKILL, up to a second more
 *   for its end to be seen), and the tree, lost, is found by its scope id. Only a helper that does
 *   not answer makes the bound twice the grace and 2 s; it answers within a millisecond or so.
 */
export const terminate = (tree: Tree, grace: Duration.DurationInput): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (tree.pending?.() === true) {
      const deadline = Date.now() + Duration.toMillis(Duration.decode(grace))
      while (tree.pending() && Date.now() < deadline) yield* Effect.sleep(startPollInterval)
      if (tree.pending()) SpawnHelper.stop()
      while (tree.pending() && Date.now() < deadline + 1000) yield* Effect.sleep(startPollInterval)
    }
    let left = members(tree)
    if (left.length > 0) {
      signalAll(tree, left, "SIGTERM")
      const deadline = Date.now() + Duration.toMillis(Duration.decode(grace))
      while (left.length > 0 && Date.now() < deadline) {
        yield* Effect.sleep(pollInterval)
        left = members(tree)
      }
    }
    const deadline = Date.now() + 1000
    while (left.length > 0 && Date.now() < deadline) {
      killNow(tree)
      yield* Effect.sleep(pollInterval)
      left = members(tree)
    }
  }).pipe(Effect.ensuring(Effect.sync(() => live.delete(tree))))
