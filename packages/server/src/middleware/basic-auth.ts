export * as BasicAuth from "./basic-auth.js"

import { Traced } from "@opencode-ai/core"
import { Errors } from "@opencode-ai/schema"
import { Context, Layer, Option, Redacted } from "effect"

/** The credentials that guard the server, when a password is configured. */
export interface Credentials {
  readonly username: string
  readonly password: Redacted.Redacted<string>
}

/**
 * The server's Basic auth policy. `None` means every request is allowed; the embedded host and
 * a server started without `OPENCODE_SERVER_PASSWORD` run that way.
 */
export class Policy extends Context.Tag("@opencode-ai/server/BasicAuth/Policy")<Policy, Option.Option<Credentials>>() {}

export const layer = (credentials: Option.Option<Credentials>) => Layer.succeed(Policy, credentials)

/** `OPENCODE_SERVER_PASSWORD` turns auth on; `OPENCODE_SERVER_USERNAME` defaults to `opencode`. */
export const fromEnv = (env: Record<string, string | undefined>): Option.Option<Credentials> =>
  env.OPENCODE_SERVER_PASSWORD
    ? Option.some({
        username: env.OPENCODE_SERVER_USERNAME || "opencode",
        password: Redacted.make(env.OPENCODE_SERVER_PASSWORD)
      })
    : Option.none()

const textEncoder = new TextEncoder()

/** Compares in time independent of where the first difference is. */
const sameBytes = (a: string, b: string): boolean => {
  const x = textEncoder.encode(a)
  const y = textEncoder.encode(b)
  let diff = x.length ^ y.length
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0)
  return diff === 0
}

const decodeBasic = (header: string | undefined): Option.Option<{ username: string; password: string }> => {
  if (!header || !/^basic /i.test(header)) return Option.none()
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0
    ? Option.none()
    : Option.some({ username: decoded.slice(0, colon), password: decoded.slice(colon + 1) })
}

/** Whether an `Authorization` header satisfies the credentials. */
export const accepts = (credentials: Credentials, header: string | undefined): boolean =>
  Option.match(decodeBasic(header), {
    onNone: () => false,
    onSome: (given) =>
      // Evaluate both comparisons so the timing does not reveal which part was wrong.
      [
        sameBytes(given.username, credentials.username),
        sameBytes(given.password, Redacted.value(credentials.password))
      ].every(Boolean)
  })

/**
 * Checks one request's `Authorization` header against the policy.
 * Fails with `UnauthorizedError` when credentials are required and missing or wrong.
 */
export const verify = Traced.fn("BasicAuth.verify")(function* (header: string | undefined) {
  const policy = yield* Policy
  if (Option.isSome(policy) && !accepts(policy.value, header)) {
    return yield* new Errors.UnauthorizedError({ message: "Missing or invalid credentials" })
  }
})
