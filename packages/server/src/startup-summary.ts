export * as StartupSummary from "./startup-summary.js"

/** What the summary reports; gathered by `Serve.run` once the listener is bound and Core is built. */
export interface Facts {
  readonly version: string
  readonly url: string
  readonly dataDir: string
  /** Where sessions are kept, for people: `SQLite <file>` or `PostgreSQL <url without password>` (`Storage.describe`). */
  readonly database: string
  /** The configuration documents read, in merge order (`Config.Service.sources`). */
  readonly configSources: ReadonlyArray<string>
  /** The available providers with their model counts, in catalog order. */
  readonly providers: ReadonlyArray<{ readonly id: string; readonly models: number }>
  /** The Basic auth username when a password is set; absent when auth is off. */
  readonly authUser?: string | undefined
}

/**
 * The URL a client uses for a bound TCP address: an IPv6 address is bracketed (`http://[::1]:4096`),
 * as RFC 3986 requires; a name or an IPv4 address is written as it is. Only an IPv6 address has a
 * colon (`net.isIPv6` would compile Node's IPv6 pattern, 5 ms of every start).
 */
export const url = (address: { readonly hostname: string; readonly port: number }): string =>
  address.hostname.includes(":")
    ? `http://[${address.hostname}]:${address.port}`
    : `http://${address.hostname}:${address.port}`

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`

/**
 * The start-up summary `opencode serve` prints to stdout: the `opencode server listening on <url>`
 * line first (scripts and tests look for it), then one aligned line each for the version, the data
 * directory, the database (an SQLite file, or a PostgreSQL URL without its password), the config files read, the available providers with their model
 * counts, and whether Basic auth is on. Plain text: no colour.
 */
export const lines = (facts: Facts): ReadonlyArray<string> => {
  const models = facts.providers.reduce((sum, provider) => sum + provider.models, 0)
  const providers =
    facts.providers.length === 0
      ? "none available (configure one in opencode.json, or connect a credential)"
      : `${plural(facts.providers.length, "provider")}, ${plural(models, "model")}: ${facts.providers
          .map((provider) => `${provider.id} (${provider.models})`)
          .join(", ")}`
  const row = (label: string, value: string) => `  ${label.padEnd(10)}${value}`
  return [
    `opencode server listening on ${facts.url}`,
    row("version", facts.version),
    row("data", facts.dataDir),
    row("database", facts.database),
    row("config", facts.configSources.length === 0 ? "none found (defaults)" : facts.configSources.join(", ")),
    row("providers", providers),
    row(
      "auth",
      facts.authUser === undefined
        ? "off (set OPENCODE_SERVER_PASSWORD to require a password)"
        : `on (HTTP Basic, user ${facts.authUser})`
    )
  ]
}
