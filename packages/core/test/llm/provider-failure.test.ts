import { describe, expect, it } from "vitest"
import { ProviderFailure } from "../../src/llm/provider-failure.js"

const providerID = "p"
const response = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  ProviderFailure.fromResponse({
    providerID,
    status,
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
    now: Date.parse("2025-01-01T00:00:00Z")
  })

describe("retryAfterMs", () => {
  const now = Date.parse("2025-01-01T00:00:00Z")
  it("reads retry-after-ms, delta-seconds and HTTP dates", () => {
    expect(ProviderFailure.retryAfterMs({ "retry-after-ms": "250.5" }, now)).toBe(251)
    expect(ProviderFailure.retryAfterMs({ "retry-after": "3" }, now)).toBe(3000)
    expect(ProviderFailure.retryAfterMs({ "retry-after": "0.5" }, now)).toBe(500)
    expect(ProviderFailure.retryAfterMs({ "retry-after": "Wed, 01 Jan 2025 00:00:42 GMT" }, now)).toBe(42_000)
    expect(ProviderFailure.retryAfterMs({ "retry-after": "Tue, 31 Dec 2024 23:59:00 GMT" }, now)).toBe(0)
    expect(ProviderFailure.retryAfterMs({ "retry-after": "soon" }, now)).toBeUndefined()
    expect(ProviderFailure.retryAfterMs({}, now)).toBeUndefined()
    expect(ProviderFailure.retryAfterMs({ "retry-after-ms": "100", "retry-after": "9" }, now)).toBe(100)
  })
})

describe("fromResponse", () => {
  it("detects context overflow across providers and compatible servers", () => {
    const bodies: ReadonlyArray<[number, unknown]> = [
      [
        400,
        {
          error: {
            message: "This model's maximum context length is 8192 tokens.",
            type: "invalid_request_error",
            code: "context_length_exceeded"
          }
        }
      ],
      [
        400,
        {
          type: "error",
          error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" }
        }
      ],
      [
        400,
        {
          type: "error",
          error: {
            type: "invalid_request_error",
            message: "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000"
          }
        }
      ],
      [
        400,
        {
          error: {
            code: 400,
            message: "the request exceeds the available context size, try increasing it",
            type: "exceed_context_size_error"
          }
        }
      ],
      [
        400,
        {
          object: "error",
          message: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.",
          type: "BadRequestError",
          code: 400
        }
      ],
      [500, { error: "Input token count 1200000 exceeds the maximum of 1048576" }],
      [413, "Request Entity Too Large"]
    ]
    for (const [status, body] of bodies)
      expect(response(status, body)._tag, JSON.stringify(body)).toBe("ContextOverflowError")
  })

  it("a 429 about tokens per minute is a rate limit, not an overflow", () => {
    const error = response(
      429,
      {
        error: {
          message:
            "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 45000. Please reduce the length of the messages.",
          type: "tokens",
          code: "rate_limit_exceeded"
        }
      },
      { "retry-after": "20" }
    )
    expect(error).toMatchObject({
      _tag: "ProviderError",
      retryable: true,
      retryAfterMs: 20_000,
      code: "rate_limit_exceeded"
    })
  })

  it("auth, retryable statuses and the rest", () => {
    expect(response(401, { error: { message: "Incorrect API key provided" } })).toMatchObject({
      _tag: "ProviderAuthError",
      status: 401,
      message: "Incorrect API key provided"
    })
    expect(response(403, "")).toMatchObject({ _tag: "ProviderAuthError", message: "HTTP 403" })
    for (const status of [408, 425, 429, 500, 502, 503, 504, 529]) {
      expect(response(status, "")).toMatchObject({ _tag: "ProviderError", status, retryable: true })
    }
    for (const status of [400, 404, 409, 422]) {
      expect(response(status, { error: { message: "nope" } })).toMatchObject({
        _tag: "ProviderError",
        status,
        retryable: false,
        message: "nope"
      })
    }
    expect(response(400, { detail: "Field required" })).toMatchObject({ message: "Field required" })
    expect(response(500, "<html>Bad gateway</html>")).toMatchObject({
      message: "HTTP 500: <html>Bad gateway</html>",
      body: "<html>Bad gateway</html>"
    })
  })

  it("keeps at most maxBodyLength characters of the body", () => {
    const error = response(500, "x".repeat(ProviderFailure.maxBodyLength + 100))
    expect(error._tag === "ProviderError" && error.body?.length).toBe(ProviderFailure.maxBodyLength + 1)
  })
})

describe("fromStreamError", () => {
  const stream = (payload: unknown) =>
    ProviderFailure.fromStreamError({ providerID, payload, data: JSON.stringify(payload) })
  it("classifies by type and code", () => {
    expect(stream({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })).toMatchObject({
      _tag: "ProviderError",
      retryable: true
    })
    expect(stream({ type: "error", error: { type: "api_error", message: "Internal" } })).toMatchObject({
      retryable: true
    })
    expect(stream({ error: { message: "Rate limit", type: "rate_limit_error" } })).toMatchObject({ retryable: true })
    expect(stream({ error: { message: "Provider error", code: 502 } })).toMatchObject({ status: 502, retryable: true })
    expect(stream({ type: "error", error: { type: "authentication_error", message: "bad key" } })).toMatchObject({
      _tag: "ProviderAuthError"
    })
    expect(stream({ error: { message: "too long", code: "context_length_exceeded" } })).toMatchObject({
      _tag: "ContextOverflowError"
    })
    expect(stream({ error: { message: "Invalid schema", type: "invalid_request_error" } })).toMatchObject({
      _tag: "ProviderError",
      retryable: false
    })
  })

  it("Google's shape: the numeric code is the status, the status name the code, RetryInfo the wait", () => {
    const google = (code: number, status: string, message: string, details?: ReadonlyArray<unknown>) =>
      stream({ error: { code, message, status, ...(details === undefined ? {} : { details }) } })
    expect(
      google(429, "RESOURCE_EXHAUSTED", "Quota exceeded", [
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "1.5s" }
      ])
    ).toMatchObject({
      _tag: "ProviderError",
      status: 429,
      retryable: true,
      retryAfterMs: 1500,
      code: "RESOURCE_EXHAUSTED"
    })
    expect(google(500, "INTERNAL", "An internal error has occurred.")).toMatchObject({
      retryable: true,
      code: "INTERNAL"
    })
    expect(google(504, "DEADLINE_EXCEEDED", "Deadline expired")).toMatchObject({ retryable: true })
    expect(google(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")).toMatchObject({
      _tag: "ProviderError",
      status: 400,
      retryable: false,
      code: "INVALID_ARGUMENT"
    })
    expect(
      google(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
      )
    ).toMatchObject({ _tag: "ContextOverflowError", status: 400 })
    expect(google(403, "PERMISSION_DENIED", "Permission denied")).toMatchObject({ _tag: "ProviderAuthError" })
    // A malformed delay is ignored rather than guessed.
    expect(
      google(429, "RESOURCE_EXHAUSTED", "Quota", [
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "soon" }
      ])
    ).not.toHaveProperty("retryAfterMs")
  })
})
