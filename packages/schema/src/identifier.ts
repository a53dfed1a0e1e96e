export * as Identifier from "./identifier.js"

import { Schema } from "effect"

/**
 * Identifiers are `<prefix>_` + 12 hex digits of a millisecond timestamp + 14 base62 random characters,
 * e.g. `ses_dd74ef5eeffe73avBsRqxtP7D1`. Ascending identifiers sort oldest first; descending ones
 * (sessions) store the bitwise-inverted timestamp so the newest sorts first.
 */
export const prefixes = {
  session: "ses",
  message: "msg",
  part: "prt",
  event: "evt",
  permission: "per",
  question: "que",
  pty: "pty",
  workspace: "wrk"
} as const

export type Kind = keyof typeof prefixes

const TIME_MAX = 0xffff_ffff_ffff
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const RANDOM_LENGTH = 14

let lastTime = 0

/**
 * A strictly increasing millisecond clock for this process: two identifiers minted in the same
 * millisecond still sort in creation order (the second borrows the next millisecond).
 */
const monotonicNow = (now: number): number => {
  lastTime = now > lastTime ? now : lastTime + 1
  return lastTime
}

// Random bytes are drawn a block at a time: one `getRandomValues` call per 4 KiB rather than one per
// identifier (the call, not the bytes, is what costs).
const pool = new Uint8Array(4096)
let pooled = pool.length

const randomBase62 = (length: number): string => {
  // 62 * 4 = 248: rejecting bytes >= 248 keeps every character equally likely.
  let out = ""
  while (out.length < length) {
    if (pooled === pool.length) {
      globalThis.crypto.getRandomValues(pool)
      pooled = 0
    }
    const byte = pool[pooled++]!
    if (byte < 248) out += BASE62[byte % 62]
  }
  return out
}

/** Mints a fresh identifier. Pure apart from the clock and the random source; never fails. */
export const create = (kind: Kind, direction: "ascending" | "descending", now: number = Date.now()): string => {
  const time = monotonicNow(now)
  const stamp = direction === "ascending" ? time : TIME_MAX - time
  return `${prefixes[kind]}_${stamp.toString(16).padStart(12, "0")}${randomBase62(RANDOM_LENGTH)}`
}

/** Reads the creation time back out of an identifier minted by {@link create}. */
export const timestamp = (id: string, direction: "ascending" | "descending"): number => {
  const stamp = Number.parseInt(id.slice(id.indexOf("_") + 1, id.indexOf("_") + 13), 16)
  return direction === "ascending" ? stamp : TIME_MAX - stamp
}

const prefixed = <const B extends string>(prefix: string, brand: B) =>
  Schema.String.pipe(Schema.startsWith(prefix), Schema.brand(brand))

export const SessionID = prefixed("ses", "SessionID")
export type SessionID = typeof SessionID.Type
export const MessageID = prefixed("msg", "MessageID")
export type MessageID = typeof MessageID.Type
/**
 * A message id checked the way the v2 wire contract checks it (`msg_`, underscore included). It
 * carries the same brand as {@link MessageID}, so the two are interchangeable in code; session
 * messages and `session.next.*` events use this one so their schemas match the contract.
 */
export const SessionMessageID = prefixed("msg_", "MessageID")
export const PartID = prefixed("prt", "PartID")
export type PartID = typeof PartID.Type
export const EventID = prefixed("evt_", "EventID")
export type EventID = typeof EventID.Type
export const PermissionID = prefixed("per", "PermissionID")
export type PermissionID = typeof PermissionID.Type
export const QuestionID = prefixed("que", "QuestionID")
export type QuestionID = typeof QuestionID.Type
export const PtyID = prefixed("pty", "PtyID")
export type PtyID = typeof PtyID.Type
export const WorkspaceID = prefixed("wrk", "WorkspaceID")
export type WorkspaceID = typeof WorkspaceID.Type

export const newSessionID = (now?: number): SessionID => create("session", "descending", now) as SessionID
export const newMessageID = (now?: number): MessageID => create("message", "ascending", now) as MessageID
export const newPartID = (now?: number): PartID => create("part", "ascending", now) as PartID
export const newEventID = (now?: number): EventID => create("event", "ascending", now) as EventID
