import { Identifier } from "@opencode-ai/schema"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"

const format = /^([a-z]{3})_([0-9a-f]{12})([0-9A-Za-z]{14})$/

describe("Identifier", () => {
  it("is the prefix, 12 hex digits of time and 14 base62 characters", () => {
    const now = Date.UTC(2026, 10, 29, 12, 0, 0)
    for (const id of [
      Identifier.newSessionID(now),
      Identifier.newMessageID(now),
      Identifier.newEventID(now),
      Identifier.newPartID(now)
    ]) {
      expect(id).toMatch(format)
    }
    expect(Identifier.newSessionID(now).slice(0, 4)).toBe("ses_")
    expect(Identifier.newEventID(now).slice(0, 4)).toBe("evt_")
  })

  it("carries its creation time: ascending as is, descending inverted", () => {
    const now = Date.now() + 60_000
    const event = Identifier.newEventID(now)
    expect(Identifier.timestamp(event, "ascending")).toBe(now)
    const session = Identifier.newSessionID(now + 1)
    expect(Identifier.timestamp(session, "descending")).toBe(now + 1)
    expect(session.slice(4, 16)).toBe((0xffff_ffff_ffff - (now + 1)).toString(16).padStart(12, "0"))
  })

  it("sorts events oldest first and sessions newest first, even within one millisecond", () => {
    const now = Date.now() + 120_000
    const events = Array.from({ length: 50 }, () => Identifier.newEventID(now))
    expect([...events].sort()).toEqual(events)
    const sessions = Array.from({ length: 50 }, () => Identifier.newSessionID(now))
    expect([...sessions].sort()).toEqual([...sessions].reverse())
    expect(new Set(sessions).size).toBe(50)
  })

  it("branded schemas accept their prefix and reject others", () => {
    expect(Schema.is(Identifier.SessionID)("ses_abc")).toBe(true)
    expect(Schema.is(Identifier.SessionID)("msg_abc")).toBe(false)
    expect(Schema.is(Identifier.EventID)("evt_abc")).toBe(true)
    expect(Schema.is(Identifier.EventID)("evtabc")).toBe(false)
    expect(Schema.is(Identifier.WorkspaceID)("wrk_1")).toBe(true)
  })

  it("random parts are uniform base62 and do not repeat", () => {
    const ids = Array.from({ length: 2000 }, () => Identifier.newMessageID().slice(16))
    expect(new Set(ids).size).toBe(ids.length)
    const alphabet = new Set(ids.join(""))
    expect(alphabet.size).toBe(62)
  })
})
