export * as ServerVersion from "./server-version.js"

/**
 * The runtime's version: what `opencode --version` prints and what the v1 session record of the
 * live stream's `session.created` / `session.updated` events carries as `version`.
 */
export const current = "0.1.0"
