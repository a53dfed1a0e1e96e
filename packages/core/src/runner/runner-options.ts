export * as RunnerOptions from "./runner-options.js"

/**
 * The settings of a host that runs as a cluster runner (see ClusterRunner): its address, and the
 * shard lock timings. This module has no cluster code in it, so reading the settings (the CLI, the
 * environment) does not load the cluster: that happens only when a runner starts.
 */

export interface Address {
  readonly host: string
  readonly port: number
}

export interface Options {
  /** The address other runners reach this one at (advertised in `cluster_runners`). */
  readonly address: Address
  /** The address to listen on, when it differs from the advertised one (e.g. 0.0.0.0 in a container). */
  readonly listen?: Address | undefined
  /** How often this runner refreshes its shard locks; default 1 s. */
  readonly refreshMs?: number | undefined
  /** A lock not refreshed for this long may be taken over (the takeover delay after a crash); default 5 s. */
  readonly expiryMs?: number | undefined
  /** How often runners ping one another; default 1 s. */
  readonly healthCheckMs?: number | undefined
  /**
   * How long a shard handed over to another runner (one joined) waits for the messages this runner
   * is still answering for its sessions (an Interrupt settling its Step); then they are cut off.
   * Drains are not waited for: they finish their Step here under their leases. Default 60 s.
   */
  readonly handoverMs?: number | undefined
}

export const defaultRefreshMs = 1_000
export const defaultExpiryMs = 5_000
export const defaultHealthCheckMs = 1_000
export const defaultHandoverMs = 60_000

/** `host:port` (an IPv6 host in brackets) as an {@link Address}; undefined when it is not one. */
export const parseAddress = (text: string): Address | undefined => {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim())
  if (match === null) return undefined
  const port = Number(match[3])
  if (port < 1 || port > 65535) return undefined
  return { host: match[1] ?? match[2] ?? "", port }
}

/** An {@link Address} as the cluster writes it in its tables (`host:port`). */
export const addressText = (address: Address): string => `${address.host}:${address.port}`

/**
 * The runner settings from the environment, when `OPENCODE_RUNNER_ADDRESS` (`host:port`) is set:
 * `OPENCODE_RUNNER_LISTEN` (`host:port`), and in ms `OPENCODE_SHARD_LOCK_REFRESH_MS`,
 * `OPENCODE_SHARD_LOCK_EXPIRY_MS`, `OPENCODE_RUNNER_HEALTH_CHECK_MS` and `OPENCODE_SHARD_HANDOVER_MS`. Undefined when the address
 * is unset; a malformed address or number is reported as the reason (a string).
 */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>): Options | string | undefined => {
  const raw = env.OPENCODE_RUNNER_ADDRESS
  if (raw === undefined || raw === "") return undefined
  const address = parseAddress(raw)
  if (address === undefined) return `OPENCODE_RUNNER_ADDRESS=${raw}: expected host:port`
  const listenRaw = env.OPENCODE_RUNNER_LISTEN
  const listen = listenRaw === undefined || listenRaw === "" ? undefined : parseAddress(listenRaw)
  if (listenRaw !== undefined && listenRaw !== "" && listen === undefined) {
    return `OPENCODE_RUNNER_LISTEN=${listenRaw}: expected host:port`
  }
  const millis = (name: string): number | string | undefined => {
    const value = env[name]
    if (value === undefined || value === "") return undefined
    return /^\d+$/.test(value) && Number(value) > 0
      ? Number(value)
      : `${name}=${value}: expected a positive number of ms`
  }
  const refreshMs = millis("OPENCODE_SHARD_LOCK_REFRESH_MS")
  const expiryMs = millis("OPENCODE_SHARD_LOCK_EXPIRY_MS")
  const healthCheckMs = millis("OPENCODE_RUNNER_HEALTH_CHECK_MS")
  const handoverMs = millis("OPENCODE_SHARD_HANDOVER_MS")
  for (const value of [refreshMs, expiryMs, healthCheckMs, handoverMs]) if (typeof value === "string") return value
  return {
    address,
    listen,
    refreshMs: refreshMs as number | undefined,
    expiryMs: expiryMs as number | undefined,
    healthCheckMs: healthCheckMs as number | undefined,
    handoverMs: handoverMs as number | undefined
  }
}
