export * as McpServers from "./mcp-servers.js"

/**
 * The configured MCP servers (`mcp.<name>` in opencode.json), connected for the lifetime of a Core.
 *
 * Building the layer never waits for a server and never fails: every enabled server is connected in
 * the background, concurrently, each within its own deadline (`timeout`, default
 * {@link defaultTimeoutMs}) that covers starting it, the `initialize` handshake and listing its tools.
 *
 * ```
 *   Disabled                (enabled: false)
 *   Connecting ──ok──────▶ Connected { instructions, tools } ──connection lost──▶ Failed
 *        └──error/timeout─▶ Failed { message }   (logged; its process, if any, is killed)
 * ```
 *
 * - `local` servers are started as child processes (stdio, see {@link LocalTransport}: each leads
 *   its own Process Tree, terminated with the connection and killed if the host exits). Their
 *   environment is the SDK's safe defaults (`PATH`, `HOME`, …), then the host environment, then the
 *   server's own `environment`; their working directory is the instance directory. Their stderr is
 *   kept (the last few KiB) for the failure log.
 * - `remote` servers are tried over streamable HTTP first and, if that fails, over the older
 *   HTTP+SSE transport, with the configured `headers` on every request. OAuth is not supported.
 * - A Connected server's `instructions` are what its `initialize` result said; its tools are the
 *   `tools/list` result (all pages).
 * - Closing the layer's scope closes every connection: a local server has its stdin closed and its
 *   Process Tree terminated (SIGTERM, then SIGKILL if it lingers); a connection still being made is
 *   abandoned and closed the same way.
 *
 * **MCP tools in the Tool Registry.** Once a server is Connected, each of its tools is registered
 * as an {@link McpTool} under its {@link McpToolName}. A Step samples the registry when it starts,
 * so a Step's tools never change under it. When a server notifies `tools/list_changed`, its list is
 * marked stale; {@link Interface.refresh}, which the Safe Step Boundary runs before every Step,
 * lists the stale servers' tools again and replaces their registrations (and their statuses' tool
 * names), so the next Step offers the new list. A server whose connection was lost keeps its tools
 * registered until that refresh withdraws them; a call meanwhile fails with a readable message.
 *
 * **MCP guidance** ({@link Interface.guidance}) is the Instruction Source producer the runner
 * composes for a Step's agent. Its observation is:
 * - *unavailable* while any enabled server is still Connecting: the agent's usable set cannot be
 *   known yet, so the checkpoint keeps what the model was last told (stale-while-revalidate);
 * - otherwise the Connected servers with non-empty instructions that declare no tools or have at
 *   least one tool the agent's rules do not hide (see `Permission.visibleTools`; a tool's permission
 *   action is its {@link McpToolName}), in name order; *absent* when there are none.
 * A Failed or Disabled server is simply not in the set: that is a successful observation, not an
 * unavailable one. Because every connection attempt has a deadline, "Connecting" always ends, so an
 * unavailable MCP source can delay a session's FIRST baseline (which needs every source) only until
 * {@link Interface.settled}; the runner waits for that and tries the boundary again instead of
 * leaving the session blocked.
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { Tool as SdkTool } from "@modelcontextprotocol/sdk/types.js"
import {
  Cause,
  Context,
  Data,
  Deferred,
  Duration,
  Effect,
  ExecutionStrategy,
  Exit,
  Layer,
  Option,
  Ref,
  Runtime,
  Scope
} from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { Config } from "../config/config.js"
import type { ConfigInfo } from "../config/config-info.js"
import { Instructions } from "../instructions/instructions.js"
import type { McpGuidance } from "../instructions/mcp-guidance.js"
import { Traced } from "../observability/traced.js"
import { Permission } from "../permission/permission.js"
import { ToolRegistry } from "../tool/tool-registry.js"
import type { LocalTransport } from "./local-transport.js"
import { McpTool } from "./mcp-tool.js"
import { McpToolName } from "./mcp-tool-name.js"

/** The deadline of one connection attempt when the server sets no `timeout`, in milliseconds. */
export const defaultTimeoutMs = 30_000

/** How this runtime introduces itself in `initialize`. */
const clientInfo = { name: "opencode", version: "0.1.0" }

/** How much of a local server's stderr is kept for the failure log. */
const stderrTailBytes = 4096

/** The transport a server was reached over. */
export type TransportKind = "stdio" | "streamable-http" | "sse"

/** Where one configured server stands. */
export type Status =
  | { readonly _tag: "Disabled" }
  | { readonly _tag: "Connecting" }
  | {
      readonly _tag: "Connected"
      readonly transport: TransportKind
      /** The `instructions` of the server's `initialize` result; absent when it gave none. */
      readonly instructions?: string
      /** The server's own tool names (see {@link McpToolName} for the runtime names), as listed. */
      readonly tools: ReadonlyArray<string>
      /** The process id of a local server. */
      readonly pid?: number
    }
  | { readonly _tag: "Failed"; readonly message: string }

/** One configured server: its config name and status. */
export interface Server {
  readonly name: string
  readonly status: Status
}

export interface Interface {
  /** Every configured server (enabled or not), in name order, with its current status. */
  readonly list: Effect.Effect<ReadonlyArray<Server>>
  /**
   * Resolves once no server is Connecting (each is Connected, Failed or Disabled). Bounded by the
   * servers' connect deadlines; resolves at once when there is nothing left to connect.
   */
  readonly settled: Effect.Effect<void>
  /**
   * The MCP guidance producer for an agent with `rules` (see the module doc): observes the current
   * statuses once, never waits, never fails.
   */
  readonly guidance: (rules: AgentCatalog.Ruleset) => Effect.Effect<Instructions.Observation<McpGuidance.Value>>
  /**
   * Applies tool list changes (see the module doc): lists the tools of every Connected server that
   * notified `tools/list_changed` since, replacing its registrations, and withdraws the tools of
   * servers no longer Connected. A server whose listing fails keeps its tools (logged) and stays
   * stale, so the next refresh tries again. Concurrent calls run one after the other. Interruptible
   * while listing; replacing a server's registrations is atomic. Never fails.
   */
  readonly refresh: Effect.Effect<void>
}

/** The configured MCP servers; `yield* McpServers.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/McpServers")<Service, Interface>() {}

/** Why a connection attempt failed. Internal to the layer: a failed server is a status, never an error. */
class ConnectError extends Data.TaggedError("McpConnectError")<{ readonly message: string }> {}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * The guidance observation for `servers` and an agent with `rules` (see the module doc). Pure.
 */
export const select = (
  servers: ReadonlyArray<Server>,
  rules: AgentCatalog.Ruleset
): Instructions.Observation<McpGuidance.Value> => {
  if (servers.some((server) => server.status._tag === "Connecting")) return Instructions.unavailable
  const usable: Array<McpGuidance.Server> = []
  for (const { name, status } of servers) {
    if (status._tag !== "Connected" || status.instructions === undefined) continue
    const instructions = status.instructions.trim()
    if (instructions === "") continue
    const names = status.tools.map((tool) => McpToolName.make(name, tool))
    if (names.length > 0 && Permission.visibleTools(rules, names).length === 0) continue
    usable.push({ name, instructions })
  }
  usable.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return usable.length === 0 ? Instructions.absent : usable
}

export interface Options {
  /** The host environment local servers inherit (under their own `environment`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The working directory of local servers. */
  readonly directory: string
}

/** An open client and what is known about it once connected. */
interface Connection {
  readonly client: Client
  readonly transport: TransportKind
  readonly pid?: number
}

/** Lists every page of the server's tools (none when it declares no tools capability). */
type Sdk = typeof import("./mcp-sdk.js")
let sdkLoading: Promise<Sdk> | undefined
/**
 * The MCP SDK, imported on the first connection attempt (once; later calls share it): a Core with no
 * MCP server configured, or only disabled ones, never loads it.
 */
const loadSdk = Effect.promise(() => (sdkLoading ??= import("./mcp-sdk.js")))

const listTools = async (client: Client, timeout: number, signal?: AbortSignal): Promise<ReadonlyArray<SdkTool>> => {
  if (client.getServerCapabilities()?.tools === undefined) return []
  const names: Array<SdkTool> = []
  const seen = new Set<string>()
  let cursor: string | undefined
  for (let page = 0; page < 100; page++) {
    const result = await client.listTools(cursor === undefined ? undefined : { cursor }, {
      timeout,
      ...(signal === undefined ? {} : { signal })
    })
    names.push(...result.tools)
    if (result.nextCursor === undefined || seen.has(result.nextCursor)) return names
    seen.add(result.nextCursor)
    cursor = result.nextCursor
  }
  return names
}

/** What the layer keeps about a Connected server besides its status. */
interface Live {
  readonly client: Client
  readonly timeout: number
  readonly scope: Scope.Scope
  /** The scope of its current tool registrations (replaced on refresh). */
  registrations: Scope.CloseableScope | undefined
  /** Its Connected status without the tool names. */
  readonly connected: Omit<Extract<Status, { readonly _tag: "Connected" }>, "tools">
  /** It notified `tools/list_changed` since its tools were last listed. */
  stale: boolean
}

export const layer = (options: Options): Layer.Layer<Service, never, Config.Service | ToolRegistry.Service> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const registry = yield* ToolRegistry.Service
      const runtime = yield* Effect.runtime<never>()
      const layerScope = yield* Effect.scope
      const entries = Object.entries(config.info.mcp ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

      const statuses = yield* Ref.make<ReadonlyMap<string, Status>>(
        new Map(
          entries.map(([name, entry]) => [
            name,
            entry.enabled === false ? { _tag: "Disabled" } : { _tag: "Connecting" }
          ])
        )
      )
      const setStatus = (name: string, status: Status) =>
        Ref.update(statuses, (current) => new Map(current).set(name, status))
      /** For the SDK's callbacks, which run outside any fiber. */
      const setStatusNow = (name: string, status: Status) => Runtime.runSync(runtime)(setStatus(name, status))

      /**
       * Opens `transport` with a new client in the current scope: the scope's close closes both
       * (for stdio, ending the process). Interruptible: an interrupted connect is simply closed.
       */
      const open = (make: (sdk: Sdk) => Transport, timeout: number) =>
        Effect.gen(function* () {
          const sdk = yield* loadSdk
          const opened = yield* Effect.acquireRelease(
            Effect.try({
              try: () => ({ client: new sdk.Client(clientInfo), transport: make(sdk) }),
              catch: (error) => new ConnectError({ message: messageOf(error) })
            }),
            ({ client, transport }) =>
              Effect.promise(async () => {
                client.onclose = () => {}
                await client.close().catch(() => undefined)
                await transport.close().catch(() => undefined)
              })
          )
          yield* Effect.tryPromise({
            try: (signal) => opened.client.connect(opened.transport, { timeout, signal }),
            catch: (error) => new ConnectError({ message: messageOf(error) })
          })
          return opened
        })

      const connectLocal = (name: string, server: ConfigInfo.McpLocal, timeout: number) =>
        Effect.gen(function* () {
          const [command, ...args] = server.command
          if (command === undefined || command === "") {
            return yield* new ConnectError({ message: `mcp.${name}.command is empty` })
          }
          let stderr = ""
          const sdk = yield* loadSdk
          const env: Record<string, string> = { ...sdk.getDefaultEnvironment() }
          for (const [key, value] of Object.entries(options.env)) if (value !== undefined) env[key] = value
          Object.assign(env, server.environment ?? {})
          let transport: LocalTransport.Transport | undefined
          const opened = yield* open((sdk) => {
            transport = new sdk.LocalTransport.Transport({
              command,
              args,
              env,
              cwd: options.directory,
              onStderr: (chunk: string) => {
                stderr = (stderr + chunk).slice(-stderrTailBytes)
              }
            })
            return transport
          }, timeout).pipe(
            // Closing first reads the rest of a crashed server's stderr into the message.
            Effect.catchAll((error) =>
              Effect.promise(() => transport?.close() ?? Promise.resolve()).pipe(
                Effect.zipRight(
                  Effect.suspend(() =>
                    Effect.fail(
                      stderr.trim() === ""
                        ? error
                        : new ConnectError({ message: `${error.message}; stderr: ${stderr.trim()}` })
                    )
                  )
                )
              )
            )
          )
          const pid = (opened.transport as LocalTransport.Transport).pid
          return {
            client: opened.client,
            transport: "stdio",
            ...(pid === undefined ? {} : { pid })
          } satisfies Connection
        })

      const connectRemote = (name: string, server: ConfigInfo.McpRemote, timeout: number) =>
        Effect.gen(function* () {
          const url = yield* Effect.try({
            try: () => new URL(server.url),
            catch: () => new ConnectError({ message: `mcp.${name}.url is not a URL: ${server.url}` })
          })
          const requestInit = server.headers === undefined ? {} : { requestInit: { headers: { ...server.headers } } }
          const attempts: ReadonlyArray<readonly [TransportKind, (sdk: Sdk) => Transport]> = [
            ["streamable-http", (sdk) => new sdk.StreamableHTTPClientTransport(url, requestInit)],
            ["sse", (sdk) => new sdk.SSEClientTransport(url, requestInit)]
          ]
          const failures: Array<string> = []
          for (const [kind, make] of attempts) {
            // Each attempt in its own scope, so a failed one is closed before the next starts.
            const attemptScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
            const exit = yield* Effect.exit(Scope.extend(open(make, timeout), attemptScope))
            if (Exit.isSuccess(exit)) return { client: exit.value.client, transport: kind } satisfies Connection
            yield* Scope.close(attemptScope, exit)
            if (Exit.isInterrupted(exit)) return yield* Effect.interrupt
            failures.push(
              `${kind}: ${Option.match(Cause.failureOption(exit.cause), { onNone: () => Cause.pretty(exit.cause), onSome: (error) => error.message })}`
            )
          }
          return yield* new ConnectError({ message: failures.join("; ") })
        })

      const lives = new Map<string, Live>()

      /** What a tool of server `name` calls through, read at each call. */
      const connectionOf = (name: string): Effect.Effect<McpTool.Connection> =>
        Effect.map(Ref.get(statuses), (current): McpTool.Connection => {
          const status = current.get(name)
          const live = lives.get(name)
          if (status?._tag === "Connected" && live !== undefined) return { _tag: "Connected", client: live.client }
          return {
            _tag: "Unavailable",
            reason: status?._tag === "Failed" ? status.message : (status?._tag ?? "not configured").toLowerCase()
          }
        })

      /** Replaces the registrations of server `name` with `tools`, atomically. */
      const install = (name: string, live: Live, tools: ReadonlyArray<SdkTool>) =>
        Effect.uninterruptible(
          Effect.gen(function* () {
            const previous = live.registrations
            const next = yield* Scope.fork(live.scope, ExecutionStrategy.sequential)
            yield* Effect.forEach(
              tools,
              (tool) => registry.register(McpTool.make({ server: name, tool, connection: connectionOf(name) })),
              { discard: true }
            ).pipe(Scope.extend(next))
            live.registrations = next
            if (previous !== undefined) yield* Scope.close(previous, Exit.void)
          })
        )

      /** Withdraws every tool of a server. */
      const withdraw = (live: Live) =>
        Effect.uninterruptible(
          Effect.suspend(() => {
            const previous = live.registrations
            live.registrations = undefined
            return previous === undefined ? Effect.void : Scope.close(previous, Exit.void)
          })
        )

      const refreshLock = yield* Effect.makeSemaphore(1)
      const refreshOne = (name: string, live: Live) =>
        Effect.gen(function* () {
          const connectedNow = (yield* Ref.get(statuses)).get(name)?._tag === "Connected"
          if (!connectedNow) {
            lives.delete(name)
            return yield* withdraw(live)
          }
          if (!live.stale) return
          // Cleared first: a notification that arrives while listing marks it stale again.
          live.stale = false
          const exit = yield* Effect.exit(
            Effect.tryPromise({
              try: (signal) => listTools(live.client, live.timeout, signal),
              catch: messageOf
            }).pipe(Effect.onInterrupt(() => Effect.sync(() => (live.stale = true))))
          )
          if (Exit.isFailure(exit)) {
            live.stale = true
            const reason = Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.pretty(exit.cause))
            return yield* Effect.logWarning(`MCP server ${name}: tools/list failed: ${reason}`)
          }
          if ((yield* Ref.get(statuses)).get(name)?._tag !== "Connected") return
          yield* install(name, live, exit.value)
          yield* setStatus(name, { ...live.connected, tools: exit.value.map((tool) => tool.name) })
          yield* Effect.logInfo(`MCP server ${name}: tool list changed, now ${exit.value.length} tool(s)`)
        }).pipe(Effect.annotateLogs({ mcpServer: name }))
      const refresh = Traced.fn("McpServers.refresh")(function* () {
        // No server has connected (the usual case): nothing to apply, and no lock to take at each Step.
        if (lives.size === 0) return
        yield* refreshLock.withPermits(1)(
          Effect.forEach([...lives], ([name, live]) => refreshOne(name, live), {
            concurrency: "unbounded",
            discard: true
          })
        )
      })

      /** Connects one server within its deadline and records the outcome. Never fails. */
      const connect = Traced.fn("McpServers.connect")(
        function* (name: string, server: ConfigInfo.Mcp, serverScope: Scope.CloseableScope) {
          const timeout = ("timeout" in server ? server.timeout : undefined) ?? defaultTimeoutMs
          const attempt = Effect.gen(function* () {
            if (!("type" in server) || server.type === undefined) {
              return yield* new ConnectError({ message: `mcp.${name} has no "type" ("local" or "remote")` })
            }
            const connection: Connection =
              server.type === "local"
                ? yield* connectLocal(name, server, timeout)
                : yield* connectRemote(name, server, timeout)
            const tools = yield* Effect.tryPromise({
              try: () => listTools(connection.client, timeout),
              catch: (error) => new ConnectError({ message: `tools/list failed: ${messageOf(error)}` })
            })
            return { connection, tools }
          }).pipe(
            Effect.timeoutFail({
              duration: Duration.millis(timeout),
              onTimeout: () => new ConnectError({ message: `not connected within ${timeout} ms` })
            })
          )
          const exit = yield* Effect.exit(Scope.extend(attempt, serverScope))
          if (Exit.isFailure(exit)) {
            yield* Scope.close(serverScope, exit)
            if (Exit.isInterrupted(exit)) return
            const message = Option.match(Cause.failureOption(exit.cause), {
              onNone: () => Cause.pretty(exit.cause),
              onSome: (error) => error.message
            })
            yield* Effect.logWarning(`MCP server ${name} failed to connect: ${message}`)
            yield* setStatus(name, { _tag: "Failed", message })
            return
          }
          const { connection, tools } = exit.value
          const { client } = connection
          const instructions = client.getInstructions()
          const connected = {
            _tag: "Connected" as const,
            transport: connection.transport,
            ...(instructions === undefined ? {} : { instructions }),
            ...(connection.pid === undefined ? {} : { pid: connection.pid })
          }
          const live: Live = { client, timeout, scope: serverScope, connected, registrations: undefined, stale: false }
          lives.set(name, live)
          // Tool list changes are applied at the next refresh (the next Safe Step Boundary).
          const sdk = yield* loadSdk
          client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, async () => {
            live.stale = true
          })
          yield* install(name, live, tools)
          yield* setStatus(name, { ...connected, tools: tools.map((tool) => tool.name) })
          yield* Effect.logInfo(
            `MCP server ${name} connected over ${connection.transport} with ${tools.length} tool(s)`
          )

          // A server that goes away is no longer usable: Failed (so its guidance is withdrawn, and its
          // tools at the next refresh).
          client.onclose = () => {
            setStatusNow(name, { _tag: "Failed", message: "connection closed" })
            Runtime.runFork(runtime)(Effect.logWarning(`MCP server ${name} closed its connection`))
          }
        },
        (effect, name) => Effect.annotateLogs(effect, { mcpServer: name })
      )

      // One scope per server, made now so that closing the layer first stops the connecting fiber
      // (added last, so run first) and then closes every connection.
      const pending = entries.filter(([, entry]) => entry.enabled !== false)
      const settledSignals: Array<Deferred.Deferred<void>> = []
      const tasks: Array<Effect.Effect<void>> = []
      for (const [name, server] of pending) {
        const serverScope = yield* Scope.fork(layerScope, ExecutionStrategy.sequential)
        const settled = yield* Deferred.make<void>()
        settledSignals.push(settled)
        tasks.push(Effect.ensuring(connect(name, server, serverScope), Deferred.succeed(settled, undefined)))
      }
      if (tasks.length > 0) yield* Effect.forkScoped(Effect.all(tasks, { concurrency: "unbounded", discard: true }))

      const list = Effect.map(Ref.get(statuses), (current) =>
        [...current].map(([name, status]): Server => ({ name, status }))
      )
      return Service.of({
        list,
        settled: Effect.forEach(settledSignals, Deferred.await, { discard: true }),
        guidance: (rules) => Effect.map(list, (servers) => select(servers, rules)),
        refresh: refresh()
      })
    })
  )

/** A fixed set of servers, for tests of the producer and the runner without processes. */
export const layerTest = (servers: ReadonlyArray<Server>): Layer.Layer<Service> =>
  Layer.succeed(
    Service,
    Service.of({
      list: Effect.succeed(servers),
      settled: Effect.void,
      guidance: (rules) => Effect.succeed(select(servers, rules)),
      refresh: Effect.void
    })
  )
