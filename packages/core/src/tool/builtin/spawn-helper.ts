export * as SpawnHelper from "./spawn-helper.js"

import * as childProcess from "node:child_process"
import { EventEmitter } from "node:events"
import * as nodeFs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { PassThrough } from "node:stream"

/**
 * The Spawn Helper: a small, long-lived `node` process that starts commands for the host, so that
 * the host never forks itself for a `bash` call.
 *
 * **Why.** On Linux, Node 20 starts a child with `fork()`, and a fork costs in proportion to the
 * host's memory: the kernel copies the page tables of the whole process and `spawn` holds the event
 * loop until the child has exec'd (8–11 ms on the 2-vCPU VM this was measured on, for every session
 * the host runs). It also write-protects every page, so each page the host writes afterwards faults
 * once: about 1,100 minor faults per `bash` call in `opencode serve`. The forks and their faults were
 * half of a tool turn's server CPU (`bench/README.md`, `spawn-cost.ts`). The helper is a fresh `node`
 * with a 1 MiB young generation; its forks are cheap, and the host forks once, to start it.
 *
 * **How a command runs.** The host sends the command (file, arguments, directory, environment) over
 * the helper's IPC channel. The helper connects twice to the host's private Unix socket (in a
 * directory of mode 0700 under the system's temporary directory), names the command and the stream
 * in a header line on each connection, and gives the two sockets to the child as its stdout and
 * stderr: a command sees socket pairs there, as when Node spawns it directly. The helper's own copies
 * are closed at once, so the host sees the end of a stream when the command and whatever it started
 * have closed it. The helper spawns the command detached (a new session and process group) and
 * reports its pid, when it started (`/proc/PID/stat` field 22, read before the helper can reap it),
 * and, as it reaps the command, the exit and the kernel's last handed-out pid (read in the same call
 * as the reap: see `ProcessTree`, "Without a scan").
 *
 * **Spare streams.** Connecting a command's two streams is a round trip through the host's event
 * loop before the command can start. So the helper keeps one pair connected ahead, named as a spare
 * (`s<helper pid>.<n>`) rather than for a command, and makes another after each command. The host
 * gives a command the ready pair of its helper, if there is one, before it sends the command, and
 * names the pair in it; the helper then starts the command at once. Nothing arrives on a spare until
 * a command has it (no process holds it before), a spare does not keep the host alive, and a spare
 * whose helper stops is closed. A command sent while no pair is ready connects its own, as before.
 *
 * **What the host learns late.** A command's reap reaches the host one message after it happened, so
 * for that moment the host still takes the pid for the command's. A pid is handed out again only
 * after the kernel's counter has gone round every other free pid, so this misses only such a wrap
 * within one message's delivery, the same case `ProcessTree` already names.
 *
 * **Failure.** A helper that stops (killed, crashed) fails every command it had started and not yet
 * reported: each emits `error`, its pid is no longer taken for the command's (it was reparented), and
 * a command whose pid never arrived is `lost`: `ProcessTree` then finds its tree by the scope id in
 * its environment alone. The next command starts a new helper. A helper that cannot start at all
 * (no usable `node` binary) turns the helper off for the host's lifetime; commands are then spawned
 * by the host itself.
 *
 * **The host's end.** The helper holds the host's IPC channel; when it closes (the host exited or was
 * SIGKILLed), the helper SIGKILLs the process group of every command still running and exits. It
 * ignores SIGINT, SIGTERM and SIGHUP (a Ctrl-C in the terminal reaches the host's whole group): the
 * host decides when its commands end. So a killed host no longer leaves its commands running, as
 * long as they stayed in their group.
 *
 * **Where.** Linux only: elsewhere commands are spawned by the host, as before.
 */

/** The helper's program (CommonJS, Node's built-ins only), run with `node -e`; argv[1] is the host's socket path. */
const program = String.raw`
"use strict"
const net = require("node:net")
const childProcess = require("node:child_process")
const fs = require("node:fs")
const socketPath = process.argv[1]
const running = new Map()
const lastPid = () => {
  try {
    const value = Number.parseInt(fs.readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"), 10)
    return Number.isInteger(value) ? value : undefined
  } catch {
    return undefined
  }
}
const startedOf = (pid) => {
  try {
    const text = fs.readFileSync("/proc/" + pid + "/stat", "utf8")
    const value = Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[19])
    return Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}
const send = (message) => {
  if (process.connected) process.send(message)
}
// A connection to the host's socket for stream "stdout" or "stderr" of "id", resolved once its header
// line is written; "registered" (if given) gets the socket before the header goes out, so that the
// host, which names a spare pair only after reading both headers, never names one this side lacks.
const connect = (id, stream, registered) =>
  new Promise((resolve, reject) => {
    const socket = net.connect(socketPath)
    socket.once("error", reject)
    socket.once("connect", () => {
      if (registered) registered(socket)
      socket.write(id + " " + stream + "\n", () => resolve(socket))
    })
  })
// The spare pair: two connections made ahead, named "s<pid>.<n>", that the host hands to its next
// command (the spawn's "spare"), so a command starts without waiting for its connections. One is kept
// ready; another is made as a command exits (not while it starts, which it would slow).
const spares = new Map()
let spareCount = 0
let preparing = false
const prepare = () => {
  if (preparing || spares.size > 0 || !process.connected) return
  preparing = true
  const id = "s" + process.pid + "." + spareCount++
  const pair = {}
  const made = (stream) => connect(id, stream, (socket) => {
    pair[stream] = socket
    if (pair.stdout && pair.stderr) spares.set(id, pair)
    // A spare the host closed (it is going away) is forgotten; a command that held it has its own copy.
    socket.once("close", () => { if (spares.get(id) === pair) spares.delete(id) })
  })
  Promise.allSettled([made("stdout"), made("stderr")]).then((results) => {
    preparing = false
    if (results.some((result) => result.status === "rejected")) {
      spares.delete(id)
      if (pair.stdout) pair.stdout.destroy()
      if (pair.stderr) pair.stderr.destroy()
    }
  })
}
const launch = (message, out, err) => {
  const id = message.id
  const fail = (error) => send({ type: "error", id, message: error && error.message ? error.message : String(error) })
  let child
  try {
    child = childProcess.spawn(message.file, message.args, {
      cwd: message.cwd,
      env: message.env,
      detached: true,
      stdio: ["ignore", out, err]
    })
  } catch (error) {
    out.destroy()
    err.destroy()
    return fail(error)
  }
  out.destroy()
  err.destroy()
  const pid = child.pid
  if (pid === undefined) return child.once("error", fail)
  running.set(id, pid)
  // The first exit listener: Node emits exit in the same call as it reaps the child.
  child.once("exit", (code, signal) => {
    const last = lastPid()
    running.delete(id)
    send({ type: "exit", id, code, signal, lastPid: last })
    prepare()
  })
  send({ type: "spawned", id, pid, started: startedOf(pid) })
}
process.on("message", (message) => {
  if (message === null || typeof message !== "object" || message.type !== "spawn") return
  const id = message.id
  const fail = (error) => send({ type: "error", id, message: error && error.message ? error.message : String(error) })
  if (message.spare !== undefined) {
    const pair = spares.get(message.spare)
    spares.delete(message.spare)
    if (pair === undefined) return fail(new Error("its streams were lost before it started"))
    return launch(message, pair.stdout, pair.stderr)
  }
  Promise.allSettled([connect(id, "stdout"), connect(id, "stderr")]).then(([out, err]) => {
    if (out.status !== "fulfilled" || err.status !== "fulfilled") {
      for (const result of [out, err]) if (result.status === "fulfilled") result.value.destroy()
      return fail(out.status === "rejected" ? out.reason : err.reason)
    }
    launch(message, out.value, err.value)
  })
})
prepare()
// Ctrl-C in a terminal, or a stop sent to the host's group, is for the host: the helper ends when the
// host's channel closes, and kills what it started then.
for (const name of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(name, () => {})
process.on("disconnect", () => {
  for (const pid of running.values()) {
    try {
      process.kill(-pid, "SIGKILL")
    } catch {}
  }
  process.exit(0)
})
`

/** What the helper reports about a command. */
type Report =
  | { readonly type: "spawned"; readonly id: string; readonly pid: number; readonly started?: number }
  | {
      readonly type: "exit"
      readonly id: string
      readonly code: number | null
      readonly signal: NodeJS.Signals | null
      readonly lastPid?: number
    }
  | { readonly type: "error"; readonly id: string; readonly message: string }

/**
 * A command started by the helper, seen from the host. It emits what a `ChildProcess` emits for
 * `stdio: ["ignore", "pipe", "pipe"]`: `error` (it could not be started, or its helper stopped before
 * it was reaped), `exit` (code, signal) and `close` (after `exit`, once both streams have ended).
 */
export class Command extends EventEmitter {
  readonly stdout = new PassThrough()
  readonly stderr = new PassThrough()
  /** The command's pid, once the helper has reported it. */
  pid: number | undefined
  /** When it started (`/proc/PID/stat` field 22), as the helper read it before it could reap it. */
  started: number | undefined
  exitCode: number | null = null
  signalCode: NodeJS.Signals | null = null
  /** Whether the helper has reaped it (or stopped: its pid is then no longer the helper's child). */
  reaped = false
  /** The kernel's last handed-out pid, read by the helper as it reaped the command. */
  lastPidAtReap: number | undefined
  /** Whether its start has settled: spawned, failed, or lost. */
  settled = false
  /** Whether it may have started while its pid never reached the host (its helper stopped first). */
  lost = false
  readonly #ended = new Set<PassThrough>()
  #exited = false

  constructor(readonly id: string) {
    super()
    for (const stream of [this.stdout, this.stderr]) {
      // A stream destroyed by its reader counts as ended, as a `ChildProcess`'s does.
      stream.once("close", () => this.streamEnded(stream))
    }
  }

  /** `stream`'s socket reached its end (or its reader destroyed it), whether or not its data was read. */
  streamEnded(stream: PassThrough) {
    if (this.#ended.has(stream)) return
    this.#ended.add(stream)
    this.#maybeClose()
  }

  #maybeClose() {
    if (this.#ended.size === 2 && this.#exited) this.emit("close", this.exitCode, this.signalCode)
  }

  /** Applies one of the helper's reports. */
  report(report: Report) {
    switch (report.type) {
      case "spawned":
        this.pid = report.pid
        this.started = report.started
        this.settled = true
        this.emit("spawned")
        return
      case "exit":
        this.exitCode = report.code
        this.signalCode = report.signal
        this.lastPidAtReap = report.lastPid
        this.reaped = true
        this.#exited = true
        this.emit("exit", report.code, report.signal)
        this.#maybeClose()
        return
      case "error":
        this.settled = true
        this.emit("error", new Error(report.message))
        this.#endStreams()
    }
  }

  /** Its helper stopped (or never started) before reporting its end, for `reason`. */
  abandon(reason: string) {
    if (!this.settled) this.lost = true
    this.settled = true
    this.reaped = true
    this.emit("error", new Error(reason))
    this.#endStreams()
  }

  #endStreams() {
    this.stdout.destroy()
    this.stderr.destroy()
  }
}

interface Helper {
  readonly process: childProcess.ChildProcess
  /** Its commands not yet reported ended (what it abandons if it stops). */
  readonly commands: Map<string, Command>
  /** How many of its commands have not closed or failed: the host's event loop stays alive for them. */
  open: number
}

let helper: Helper | undefined
let listener: { readonly server: net.Server; readonly socketPath: string } | undefined
/** Set once a helper could not start: commands are spawned by the host from then on. */
let off = process.platform !== "linux"
let nextId = 0

/** Whether commands go through the helper on this host (Linux, and it could start). */
export const available = (): boolean => !off

/** Every command in flight, by id, across helpers: where an incoming stream connection is routed. */
const inFlight = new Map<string, Command>()

/** A helper's spare pair (see the helper's program): both connections in, neither given to a command yet. */
interface Spare {
  readonly id: string
  /** Forgets the pair when one of its connections closes before a command has it. */
  readonly closed: () => void
  stdout?: net.Socket
  stderr?: net.Socket
}
/** Spare pairs by id (`s<helper pid>.<n>`), complete or still arriving. */
const spares = new Map<string, Spare>()

/** The complete spare pair of the helper `pid`, taken out of {@link spares}, if it has one. */
const takeSpare = (pid: number | undefined): Required<Spare> | undefined => {
  if (pid === undefined) return undefined
  for (const spare of spares.values()) {
    if (spare.id.startsWith(`s${pid}.`) && spare.stdout !== undefined && spare.stderr !== undefined) {
      spares.delete(spare.id)
      spare.stdout.off("close", spare.closed)
      spare.stderr.off("close", spare.closed)
      return spare as Required<Spare>
    }
  }
  return undefined
}

/** Closes every spare connection of the helper `pid` (it stopped). */
const dropSpares = (pid: number | undefined) => {
  for (const spare of [...spares.values()]) {
    if (!spare.id.startsWith(`s${pid}.`)) continue
    spares.delete(spare.id)
    spare.stdout?.destroy()
    spare.stderr?.destroy()
  }
}

/**
 * Streams what `socket` brings (after its header, `rest` the bytes that came with it) into `target`,
 * one of `command`'s streams, with a pipe's backpressure: a reader that falls behind stops the socket.
 */
const attach = (socket: net.Socket, target: PassThrough, command: Command, rest: Buffer) => {
  socket.ref()
  target.once("close", () => socket.destroy())
  target.on("drain", () => socket.resume())
  socket.on("data", (chunk: Buffer) => {
    if (!target.destroyed && !target.write(chunk)) socket.pause()
  })
  const end = () => {
    if (!target.destroyed && !target.writableEnded) target.end()
    command.streamEnded(target)
  }
  socket.on("end", end)
  socket.on("error", end)
  socket.on("close", end)
  if (rest.length > 0 && !target.write(rest)) socket.pause()
}

/** An incoming connection: its header line names a command's stream, or a helper's spare. */
const route = (socket: net.Socket) => {
  let header = ""
  const onHeader = (chunk: Buffer) => {
    const text = header + chunk.toString("latin1")
    const end = text.indexOf("\n")
    if (end === -1) {
      header = text
      if (header.length > 64) socket.destroy()
      return
    }
    socket.off("data", onHeader)
    const [id = "", stream] = text.slice(0, end).split(" ")
    const rest = Buffer.from(text.slice(end + 1), "latin1")
    if (stream !== "stdout" && stream !== "stderr") return void socket.destroy()
    if (id.startsWith("s")) {
      // A spare: no process holds it yet, so nothing arrives on it until a command has it. It must
      // not keep the host alive meanwhile, and it is forgotten if its helper goes.
      const spare: Spare = spares.get(id) ?? {
        id,
        closed: () => {
          if (spares.get(id) !== spare) return
          spares.delete(id)
          spare.stdout?.destroy()
          spare.stderr?.destroy()
        }
      }
      if (spare[stream] !== undefined || rest.length > 0) return void socket.destroy()
      spare[stream] = socket
      spares.set(id, spare)
      socket.unref()
      socket.once("close", spare.closed)
      return
    }
    const command = inFlight.get(id)
    const target = command?.[stream]
    if (command === undefined || target === undefined || target.destroyed) return void socket.destroy()
    attach(socket, target, command, rest)
  }
  socket.on("data", onHeader)
  socket.on("error", () => socket.destroy())
}

const listen = (): { readonly server: net.Server; readonly socketPath: string } => {
  if (listener !== undefined) return listener
  const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), "opencode-spawn-"))
  nodeFs.chmodSync(dir, 0o700)
  const socketPath = path.join(dir, "s")
  const server = net.createServer(route)
  // A socket that cannot listen fails the commands waiting on it (their connects fail); later ones
  // are spawned by the host.
  server.on("error", () => {
    off = true
  })
  server.listen(socketPath)
  server.unref()
  process.once("exit", () => nodeFs.rmSync(dir, { recursive: true, force: true }))
  listener = { server, socketPath }
  return listener
}

const start = (): Helper => {
  const { socketPath } = listen()
  const proc = childProcess.spawn(process.execPath, ["--max-semi-space-size=1", "-e", program, socketPath], {
    stdio: ["ignore", "ignore", "inherit", "ipc"],
    // Nothing of the host's environment (NODE_OPTIONS would load the host's preloads); an Electron
    // host's binary runs as plain Node with this.
    env: { ELECTRON_RUN_AS_NODE: "1" },
    serialization: "json"
  })
  const started: Helper = { process: proc, commands: new Map(), open: 0 }
  let reported = false
  proc.on("message", (report: Report) => {
    reported = true
    const command = started.commands.get(report.id)
    if (command === undefined) return
    // Ended or failed: nothing more to abandon (its streams may still arrive: see `inFlight`).
    if (report.type !== "spawned") started.commands.delete(command.id)
    command.report(report)
  })
  const stopped = (reason: string) => {
    if (helper === started) helper = undefined
    dropSpares(proc.pid)
    // A helper that never reported anything may not work here at all (no usable `node`, an option
    // it refuses): the host spawns its commands itself from now on.
    if (!reported) off = true
    for (const command of [...started.commands.values()]) {
      started.commands.delete(command.id)
      command.abandon(reported ? reason : `the spawn helper could not start (${reason})`)
    }
  }
  proc.once("error", (error) => stopped(error.message))
  proc.once("exit", (code, signal) =>
    stopped(reported ? "the helper that started the command stopped" : `it exited with ${signal ?? code}`)
  )
  proc.unref()
  proc.channel?.unref()
  return started
}

/**
 * Starts `file` with `args` in `cwd` with exactly `env`, through the helper (started on first use):
 * detached, stdin ignored, stdout and stderr streamed back. Returns at once; the pid arrives with the
 * command's `spawned` event. Undefined when the helper is not {@link available} or cannot be started
 * (its socket directory cannot be made): the caller spawns the command itself.
 */
export const spawn = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string | undefined; readonly env: Record<string, string> }
): Command | undefined => {
  if (off) return undefined
  try {
    helper ??= start()
  } catch {
    off = true
    return undefined
  }
  const owner = helper
  const command = new Command(`${nextId++}`)
  owner.commands.set(command.id, command)
  // Routed to until it closes or fails: its streams may connect after its exit was reported. Until
  // then the helper's channel keeps the event loop alive (the socket listener does not).
  inFlight.set(command.id, command)
  if (owner.open++ === 0) owner.process.channel?.ref()
  let done = false
  const end = () => {
    if (done) return
    done = true
    inFlight.delete(command.id)
    if (--owner.open === 0) owner.process.channel?.unref()
  }
  command.once("close", end)
  command.on("error", end)
  // With a spare pair of this helper's ready, the command's streams are connected already and the
  // helper starts it at once; without one it connects them first.
  const spare = takeSpare(owner.process.pid)
  if (spare !== undefined) {
    attach(spare.stdout, command.stdout, command, Buffer.alloc(0))
    attach(spare.stderr, command.stderr, command, Buffer.alloc(0))
  }
  const request = {
    type: "spawn",
    id: command.id,
    file,
    args,
    cwd: options.cwd ?? process.cwd(),
    env: options.env,
    ...(spare === undefined ? {} : { spare: spare.id })
  }
  owner.process.send(request, (error) => {
    // Not sent (the helper's channel closed meanwhile): nothing was started.
    if (error === null || !owner.commands.has(command.id)) return
    owner.commands.delete(command.id)
    command.report({
      type: "error",
      id: command.id,
      message: `the helper could not take the command: ${error.message}`
    })
  })
  return command
}

/** SIGKILLs the helper (a host that cannot wait for it any more); its commands are abandoned. */
export const stop = (): void => {
  helper?.process.kill("SIGKILL")
}

/** The helper's pid, if one runs (for tests). */
export const helperPid = (): number | undefined => helper?.process.pid

/** Whether the running helper has a spare pair ready for the next command (for tests). */
export const spareReady = (): boolean => {
  const pid = helper?.process.pid
  return [...spares.values()].some(
    (spare) => spare.id.startsWith(`s${pid}.`) && spare.stdout !== undefined && spare.stderr !== undefined
  )
}
