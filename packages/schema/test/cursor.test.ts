import { Cursor } from "@opencode-ai/schema"
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"

const Payload = Schema.Struct({ anchor: Schema.String, direction: Cursor.Direction })
const codec = Cursor.codec(Payload)

describe("Cursor.codec", () => {
  it("round-trips a payload through base64url JSON", () => {
    const token = Schema.encodeSync(codec)({ anchor: "ses_1", direction: "previous" })
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(JSON.parse(Buffer.from(token, "base64url").toString("utf8"))).toEqual({
      anchor: "ses_1",
      direction: "previous"
    })
    expect(Schema.decodeSync(codec)(token)).toEqual({ anchor: "ses_1", direction: "previous" })
  })

  it("rejects tokens that are not base64url, not JSON, or not the payload", () => {
    for (const bad of [
      "!!!",
      Buffer.from("not json").toString("base64url"),
      Buffer.from('{"anchor":1}').toString("base64url")
    ]) {
      expect(Either.isLeft(Schema.decodeUnknownEither(codec)(bad))).toBe(true)
    }
  })
})

describe("Cursor.tokenOf", () => {
  it("makes the codec's token for an encoded payload, in every padding case and outside ASCII", () => {
    // Anchors of each length modulo 3 (every padding case), characters whose base64 holds `+` and `/`
    // (`>?` and `?~`), a non-ASCII path, and a control character.
    for (const anchor of ["s", "se", "ses", ">>?~~", "/tmp/é/x", "日本", "\u007f\u0000"]) {
      for (const direction of ["next", "previous"] as const) {
        const payload = { anchor, direction }
        expect(Cursor.tokenOf(payload)).toBe(Schema.encodeSync(codec)(payload))
        expect(Schema.decodeSync(codec)(Cursor.tokenOf(payload))).toEqual(payload)
      }
    }
  })
})
