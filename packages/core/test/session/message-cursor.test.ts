import { Arbitrary, Effect, FastCheck as fc, Schema } from "effect"
import { expect, it } from "vitest"
import { MessageCursor } from "../../src/session/message-cursor.js"

it("a token is byte for byte the one the Schema codec encodes, for any payload, and decodes back to it", () => {
  const encodeToken = Schema.encodeSync(MessageCursor.Token)
  fc.assert(
    fc.property(Arbitrary.make(MessageCursor.Payload), (payload) => {
      const token = MessageCursor.encode(payload)
      expect(token).toBe(encodeToken(payload))
      expect(Effect.runSync(MessageCursor.decode(token))).toEqual(payload)
    }),
    { numRuns: 500 }
  )
})
