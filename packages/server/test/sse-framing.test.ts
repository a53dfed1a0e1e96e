import * as Sse from "@effect/experimental/Sse"
import { describe, expect, it } from "vitest"
import { SseFraming } from "../src/sse/sse-framing.js"

/** `SseFraming.event` writes exactly what the SSE encoder writes, on its direct path and off it. */
describe("SseFraming.event", () => {
  const datas = [
    "",
    "{}",
    '{"a":"b\\nc"}',
    "one\ntwo",
    "\n",
    "x".repeat(70_000),
    '{"emoji":"ölçü 🎉"}',
    "data: x",
    " lead"
  ]
  const events = ["session.next.text.delta", "message", "effect/httpapi/stream/failure", "e"]
  const ids = [undefined, "0", "7", "123456789"]

  it("is byte for byte the encoder's frame for every id, event and data", () => {
    for (const data of datas)
      for (const event of events)
        for (const id of ids)
          expect(SseFraming.event({ id, event, data })).toBe(Sse.encoder.write({ _tag: "Event", id, event, data }))
  })
})
