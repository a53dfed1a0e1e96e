export * as ApiDocumentation from "./api-documentation.js"

import type { OpenApi } from "@effect/platform"

/**
 * What the OpenAPI document says about the API as a whole, beyond what each endpoint declares: the
 * meaning of the parameters shared across operations, the Basic auth scheme, and the default server.
 * Applied to the whole document (`OpenApi.Transform` on the API), so `/doc`, `/doc/ui` and the
 * checked-in `openapi.json` say the same.
 */

/** One description per parameter name and place; a parameter means the same wherever it appears. */
export const parameters: Readonly<Record<string, string>> = {
  "path:sessionID": "The session's id (`ses_…`).",
  "path:messageID": "The message's id (`msg_…`), one of this session's messages.",
  "path:requestID": "The pending request's id, as announced when it was asked.",
  "path:key":
    "The instruction entry's key: lower-case letters, digits, `.`, `_` and `-`, starting with a letter or digit.",
  "path:id": "The saved permission's id.",
  "path:providerID": "The provider's id, e.g. `openai` or `anthropic`.",
  "path:integrationID": "The integration's id: the id of the provider it connects, e.g. `openai`.",
  "path:attemptID": "The OAuth attempt's id (`att_…`), as `connect/oauth` returned it.",
  "path:credentialID": "The stored credential's id: the id of the provider it is stored for.",
  "path:ptyID": "The PTY's id (`pty_…`).",
  "query:location":
    "The Location the request is about, as a deepObject: `location[directory]` (an absolute directory; default the server's working directory) and `location[workspace]` (a workspace id).",
  "query:limit": "The page size: at most this many items (see the operation for its default and bounds).",
  "query:location[directory]":
    "The Location's directory (absolute; default the server's working directory), on the PTY `connect` upgrade, which lists the Location's keys one by one.",
  "query:location[workspace]": "The Location's workspace id (`wrk_…`), on the PTY `connect` upgrade.",
  "query:cursor":
    "Continues a listing from a page's `cursor.next` or `cursor.previous`. It may be sent with `limit` (the continuation's page size) and the first page's filters unchanged, but not with `order`. On a PTY's `connect`: the output offset to replay from, as a meta frame gave it (`-1`: no replay; default: all retained output).",
  "query:ticket":
    "A PTY connect ticket from `POST /api/pty/{ptyID}/connect-token`, in place of the `Authorization` header: valid once, for this PTY, until it expires.",
  "query:order": "`desc` (newest first, the default) or `asc` (oldest first). Only on a first page.",
  "query:search": "Only sessions whose title contains this text (case-insensitive).",
  "query:directory": "Only sessions whose Location directory is exactly this absolute path.",
  "query:workspace": "Only sessions of this workspace (`wrk_…`).",
  "query:project": "Only sessions of this project id.",
  "query:subpath": "Only sessions at this path relative to their project root.",
  "query:projectID": "Only the saved permissions of this project id.",
  "query:after": "Only events with a sequence number greater than this one (default 0: from the start).",
  "query:path":
    "A path relative to the Location directory (`src/lib`), `/`-separated; default the Location directory itself.",
  "query:query": "The text to look for: terms separated by spaces, each matched case-insensitively against the path.",
  "query:type": "`file` or `directory`: only entries of this type (default both)."
}

/** The security scheme named in the document: HTTP Basic, used when the server has a password. */
export const basicAuth = {
  type: "http",
  scheme: "basic",
  description:
    "HTTP Basic auth, required on every route when the server is started with `OPENCODE_SERVER_PASSWORD` (user `opencode`, or `OPENCODE_SERVER_USERNAME`). Without a password the server is open to its own origin only."
} as const

/** The address `opencode serve` listens on by default. */
export const servers: ReadonlyArray<OpenApi.OpenAPISpecServer> = [
  { url: "http://127.0.0.1:4096", description: "`opencode serve` on its default address" }
]

/**
 * The components whose union the contract renders as `oneOf` (exactly one member matches) rather
 * than Effect's `anyOf`: the durable event union, whose members are told apart by their `type`
 * literal, so at most one can match and both keywords accept the same events. Only the spelling
 * differs, and generators read it (a `oneOf` becomes a discriminated union).
 */
export const oneOfUnions: ReadonlySet<string> = new Set(["SessionDurableEvent"])

const asOneOf = (schemas: Record<string, any>): Record<string, any> =>
  Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => {
      if (!oneOfUnions.has(name) || !Array.isArray(schema?.anyOf)) return [name, schema]
      const { anyOf, ...rest } = schema
      return [name, { ...rest, oneOf: anyOf }]
    })
  )

/**
 * Completes a generated document: every parameter gets its shared description (a description the
 * endpoint's schema gave is replaced, so one name reads the same everywhere), the Basic scheme is
 * declared, every operation accepts it or no credentials (the server decides which applies), and the
 * {@link oneOfUnions} are spelled `oneOf`.
 */
export const complete = (spec: Record<string, any>): Record<string, any> => {
  const paths: Record<string, Record<string, any>> = {}
  for (const [route, methods] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
    paths[route] = {}
    for (const [method, operation] of Object.entries(methods)) {
      paths[route][method] = {
        ...operation,
        parameters: (operation.parameters ?? []).map((parameter: Record<string, any>) => {
          const description = parameters[`${parameter.in}:${parameter.name}`]
          return description === undefined ? parameter : { ...parameter, description }
        }),
        security: [{}, { basicAuth: [] }]
      }
    }
  }
  return {
    ...spec,
    paths,
    components: {
      ...spec.components,
      schemas: asOneOf(spec.components?.schemas ?? {}),
      securitySchemes: { ...spec.components?.securitySchemes, basicAuth }
    }
  }
}
