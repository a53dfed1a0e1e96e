import { Headers, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { RequestOrigin } from "../src/middleware/request-origin.js"

/**
 * `RequestOrigin.check` in process: the verdict on `Host` and `Origin` is the same on the first request
 * and on every repeat (the listener remembers the verdicts of recent `Host` headers), per listener port.
 */

const request = (headers: Record<string, string>, method = "GET") =>
  HttpServerRequest.fromWeb(new Request("http://127.0.0.1/api/health", { method })).modify({
    headers: Headers.fromInput(headers)
  })

const settings = (port: number, hostname = "127.0.0.1"): RequestOrigin.Settings => ({
  allowed: new Set(["http://allowed.test"]),
  listener: Option.some({ hostname, port })
})

/** The status of the refusal, or "pass". */
const verdict = (policy: RequestOrigin.Settings, headers: Record<string, string>, method?: string) =>
  Effect.runSync(
    Effect.map(RequestOrigin.check(policy, request(headers, method)), (refused) =>
      Option.match(refused, { onNone: () => "pass" as const, onSome: (response) => response.status })
    )
  )

describe("RequestOrigin.check", () => {
  it("gives the same verdict on a Host header every time it is seen", () => {
    const a = settings(4096)
    const b = settings(4097)
    for (let round = 0; round < 3; round++) {
      expect(verdict(a, { host: "127.0.0.1:4096" })).toBe("pass")
      expect(verdict(a, { host: "localhost:4096" })).toBe("pass")
      // The same header under another listener's port is not that listener.
      expect(verdict(b, { host: "127.0.0.1:4096" })).toBe(403)
      expect(verdict(b, { host: "127.0.0.1:4097" })).toBe("pass")
      expect(verdict(a, { host: "evil.test:4096" })).toBe(403)
      expect(verdict(a, {})).toBe(403)
    }
  })

  it("still refuses a foreign Host after many distinct headers have been seen", () => {
    const policy = settings(4096)
    for (let i = 0; i < 500; i++) {
      expect(verdict(policy, { host: `h${i}.test:4096` })).toBe(403)
      expect(verdict(policy, { host: "[::1]:4096" })).toBe("pass")
    }
  })

  it("checks the Origin whenever one is sent, and ignores Host on a listener that is not loopback", () => {
    const policy = settings(4096)
    for (let round = 0; round < 2; round++) {
      expect(verdict(policy, { host: "127.0.0.1:4096", origin: "http://evil.test" })).toBe(403)
      expect(verdict(policy, { host: "127.0.0.1:4096", origin: "http://127.0.0.1:4096" })).toBe("pass")
      expect(verdict(policy, { host: "127.0.0.1:4096", origin: "http://allowed.test" })).toBe("pass")
      expect(
        verdict(
          policy,
          { host: "127.0.0.1:4096", origin: "http://allowed.test", "access-control-request-method": "POST" },
          "OPTIONS"
        )
      ).toBe(204)
    }
    const open = settings(4096, "0.0.0.0")
    expect(verdict(open, { host: "anything.test" })).toBe("pass")
    expect(verdict(open, { host: "anything.test", origin: "http://evil.test" })).toBe(403)
  })
})
