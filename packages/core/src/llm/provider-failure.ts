export * as ProviderFailure from "./provider-failure.js"

/**
 * Turns what a provider says when something goes wrong (an HTTP error response, or an error object
 * inside an event stream) into a typed {@link LLMError}. Pure: the current time is a parameter, so
 * `Retry-After` dates are computed against the caller's Clock.
 *
 * Classification, first match wins:
 * 1. 401 / 403, or an authentication / permission error type (Google: `UNAUTHENTICATED`,
 *    `PERMISSION_DENIED`, or a 400 whose reason is `API_KEY_INVALID`) → {@link ProviderAuthError};
 * 2. 413, an overflow code, or an overflow message ({@link isOverflowMessage}) on anything but a 429 →
 *    {@link ContextOverflowError} (a 429 "request too large … tokens per min" is a rate limit);
 * 3. 408, 425, 429, 5xx (incl. 529), or an overloaded / rate-limit / server error type (Google:
 *    `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `INTERNAL`, `DEADLINE_EXCEEDED`) → a retryable
 *    {@link ProviderError}, with `retryAfterMs` when the response said how long to wait (headers
 *    first, else a Google `RetryInfo.retryDelay` in the body);
 * 4. anything else → a non-retryable {@link ProviderError}.
 */

import { ContextOverflowError, type Any as LLMError, ProviderAuthError, ProviderError } from "./llm-error.js"

/** Response bodies kept on errors are cut to this many characters. */
export const maxBodyLength = 16_384

const truncate = (body: string) => (body.length > maxBodyLength ? `${body.slice(0, maxBodyLength)}…` : body)

// Our own list of the ways providers and popular compatible servers phrase "the prompt is too big
// for the context window". Checked against the error message and code, case-insensitively.
const overflowPatterns: ReadonlyArray<RegExp> = [
  /context[_ ]length[_ ]exceeded/i,
  /maximum context length/i,
  /prompt is too long/i,
  /context[_ ]window[_ ](?:is[_ ])?exceeded/i,
  /exceeds? (?:the )?(?:model'?s? )?(?:maximum )?context (?:window|length|size|limit)/i,
  /exceed_context_size/i,
  /input length and `?max_tokens`? exceed context limit/i,
  /reduce the length of the (?:messages|prompt|input)/i,
  /input token count .* exceeds/i,
  /too large for model with/i,
  /prompt too long/i
]

/** Whether a provider message or code says the prompt overflowed the context window. */
export const isOverflowMessage = (text: string): boolean => overflowPatterns.some((pattern) => pattern.test(text))

const authTypes = new Set([
  "authentication_error",
  "permission_error",
  "invalid_api_key",
  "unauthorized",
  "forbidden",
  // Google's canonical statuses, and the reason it gives (with a 400) for a bad key.
  "UNAUTHENTICATED",
  "PERMISSION_DENIED",
  "API_KEY_INVALID"
])
const retryableTypes = new Set([
  "overloaded_error",
  "overloaded",
  "api_error",
  "server_error",
  "internal_error",
  "rate_limit_error",
  "rate_limit_exceeded",
  "timeout",
  "timeout_error",
  "service_unavailable",
  "RESOURCE_EXHAUSTED",
  "UNAVAILABLE",
  "INTERNAL",
  "DEADLINE_EXCEEDED"
])

const isRetryableStatus = (status: number) => status === 408 || status === 425 || status === 429 || status >= 500

/**
 * Milliseconds to wait from the response headers: `retry-after-ms` (OpenAI), else `retry-after` as
 * delta-seconds (fractions allowed) or an HTTP date relative to `now`. Negative waits become 0;
 * unparseable values are ignored.
 */
export const retryAfterMs = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): number | undefined => {
  const ms = headers["retry-after-ms"]?.trim()
  if (ms !== undefined && /^\d+(?:\.\d+)?$/.test(ms)) return Math.ceil(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(?:\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** What an error payload says, whichever of the common shapes it has. */
interface Described {
  readonly message?: string
  readonly type?: string
  readonly code?: string
  readonly status?: number
  /** Google's `RetryInfo.retryDelay` (`"37s"`), in milliseconds. */
  readonly retryDelayMs?: number
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

const nonEmpty = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

/**
 * Google's `error.details`: the first `reason` (an `ErrorInfo`, e.g. `API_KEY_INVALID`) and the
 * `retryDelay` of a `RetryInfo` (a protobuf Duration: decimal seconds with an `s` suffix).
 */
const googleDetails = (details: unknown): { readonly reason?: string; readonly retryDelayMs?: number } => {
  let reason: string | undefined
  let retryDelayMs: number | undefined
  for (const detail of Array.isArray(details) ? details : []) {
    const entry = record(detail)
    reason ??= nonEmpty(entry?.reason)
    const delay = nonEmpty(entry?.retryDelay)
    const seconds = delay === undefined ? undefined : /^(\d+(?:\.\d+)?)s$/.exec(delay)?.[1]
    if (seconds !== undefined) retryDelayMs ??= Math.ceil(Number(seconds) * 1000)
  }
  return { ...(reason === undefined ? {} : { reason }), ...(retryDelayMs === undefined ? {} : { retryDelayMs }) }
}

/**
 * Reads `{error: {message, type, code}}` (OpenAI and most compatible servers), `{type: "error", error:
 * {type, message}}` (Anthropic), `{error: {code, message, status, details}}` (Google: the numeric
 * `code` is the HTTP status, the `status` string is the type, a detail's `reason` the code),
 * `{error: "text"}`, `{message}` and `{detail}`.
 */
export const describe = (payload: unknown): Described => {
  const root = record(payload)
  if (root === undefined) return {}
  const inner = record(root.error)
  const source = inner ?? root
  const google = inner === undefined ? {} : googleDetails(inner.details)
  const code = google.reason ?? source.code
  const message =
    nonEmpty(source.message) ??
    nonEmpty(root.error) ??
    nonEmpty(root.message) ??
    nonEmpty(root.detail) ??
    (record(root.detail) === undefined ? undefined : JSON.stringify(root.detail))
  const type =
    nonEmpty(source.type) ?? (inner === undefined ? undefined : (nonEmpty(root.type) ?? nonEmpty(source.status)))
  return {
    ...(message === undefined ? {} : { message }),
    ...(type === undefined || type === "error" ? {} : { type }),
    ...(typeof code === "string" && code !== "" ? { code } : {}),
    ...(typeof code === "number"
      ? { status: code }
      : typeof source.status === "number"
        ? { status: source.status }
        : typeof source.code === "number"
          ? { status: source.code }
          : {}),
    ...(google.retryDelayMs === undefined ? {} : { retryDelayMs: google.retryDelayMs })
  }
}

const parseJson = (body: string): unknown => {
  try {
    return JSON.parse(body)
  } catch {
    return undefined
  }
}

interface Classify {
  readonly providerID: string
  readonly status: number | undefined
  readonly described: Described
  readonly fallback: string
  readonly body: string | undefined
  readonly retryAfterMs: number | undefined
}

const classify = (input: Classify): LLMError => {
  const { providerID, status, described, body } = input
  const message = described.message ?? input.fallback
  const typeOrCode = [described.type, described.code].filter((x): x is string => x !== undefined)
  const withBody = body === undefined || body === "" ? {} : { body: truncate(body) }
  const withStatus = status === undefined ? {} : { status }
  if (status === 401 || status === 403 || typeOrCode.some((t) => authTypes.has(t))) {
    return new ProviderAuthError({ providerID, message, ...withStatus, ...withBody })
  }
  const overflow =
    status === 413 || (status !== 429 && [message, ...typeOrCode].some((text) => isOverflowMessage(text)))
  if (overflow) return new ContextOverflowError({ providerID, message, ...withStatus, ...withBody })
  const retryable = (status !== undefined && isRetryableStatus(status)) || typeOrCode.some((t) => retryableTypes.has(t))
  const code = described.code ?? described.type
  return new ProviderError({
    providerID,
    message,
    ...withStatus,
    retryable,
    ...(input.retryAfterMs === undefined ? {} : { retryAfterMs: input.retryAfterMs }),
    ...(code === undefined ? {} : { code }),
    ...withBody
  })
}

/** A non-2xx HTTP response. `headers` are lower-case names. */
export const fromResponse = (input: {
  readonly providerID: string
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
  readonly now: number
}): LLMError => {
  const described = describe(parseJson(input.body))
  return classify({
    providerID: input.providerID,
    status: input.status,
    described,
    fallback: `HTTP ${input.status}${input.body.trim() === "" ? "" : `: ${truncate(input.body.trim()).slice(0, 500)}`}`,
    body: input.body,
    retryAfterMs: retryAfterMs(input.headers, input.now) ?? described.retryDelayMs
  })
}

/**
 * An error object the provider sent inside an otherwise successful (2xx) event stream, e.g. an
 * OpenAI-compatible `data: {"error": {...}}` chunk or an Anthropic `event: error`. A numeric `code`
 * is read as an HTTP-like status (OpenRouter does this).
 */
export const fromStreamError = (input: {
  readonly providerID: string
  readonly payload: unknown
  readonly data: string
}): LLMError => {
  const described = describe(input.payload)
  return classify({
    providerID: input.providerID,
    status: described.status,
    described,
    fallback: "The provider reported an error in the stream",
    body: input.data,
    retryAfterMs: described.retryDelayMs
  })
}
