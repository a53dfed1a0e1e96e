import { Event, Identifier, Session } from "@opencode-ai/schema"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"

const info: Session.SessionV2Info = {
  id: Identifier.newSessionID(),
  projectID: "p",
  cost: 0,
  tokens: Session.emptyTokens,
  time: { created: 1, updated: 1 },
  title: "t",
  location: { directory: "/x" }
}

describe("records", () => {
  it("omit absent optional keys when encoding", () => {
    expect(Object.keys(Schema.encodeSync(Session.SessionV2Info)(info)).sort()).toEqual([
      "cost",
      "id",
      "location",
      "projectID",
      "time",
      "title",
      "tokens"
    ])
  })

  it("the durable envelope carries id, type, durable and data", () => {
    const event = {
      id: Identifier.newEventID(),
      type: "session.created" as const,
      durable: { aggregateID: info.id, seq: 0, version: 1 },
      data: { sessionID: info.id, info }
    }
    expect(Schema.decodeUnknownSync(Event.SessionOrigin)(JSON.parse(JSON.stringify(event)))).toEqual(event)
    expect(() =>
      Schema.decodeUnknownSync(Event.SessionOrigin)({ ...event, durable: { ...event.durable, seq: 1.5 } })
    ).toThrow()
  })
})
