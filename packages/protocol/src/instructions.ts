export * as InstructionGroup from "./instructions.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, Identifier, Json } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/**
 * An InstructionEntry key: slash-free, lower case. It names the Instruction Source `api/<key>`.
 */
export const EntryKey = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]*$/))

/** One API-managed instruction value of a session. */
export const InstructionEntryInfo = Schema.Struct({ key: EntryKey, value: Json.Value }).annotations({
  identifier: "InstructionEntryInfo"
})
export interface InstructionEntryInfo extends Schema.Schema.Type<typeof InstructionEntryInfo> {}

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })
export const EntryPath = Schema.Struct({ sessionID: Identifier.SessionID, key: EntryKey })
/** The largest instruction entry accepted: its value as compact JSON is at most 256 KiB (characters). */
export const maxEntryValueLength = 256 * 1024

/** An entry's value on `put`: any JSON value of at most {@link maxEntryValueLength} characters. */
export const EntryValue = Json.Value.pipe(
  Schema.filter((value) => JSON.stringify(value).length <= maxEntryValueLength, {
    message: () => `An instruction entry value is at most ${maxEntryValueLength} characters of JSON`,
    description: `Any JSON value of at most ${maxEntryValueLength} characters (256 KiB) as compact JSON`
  })
)

export const PutPayload = Schema.Struct({
  value: Schema.propertySignature(EntryValue).annotations({
    description: `Any JSON value of at most ${maxEntryValueLength} characters (256 KiB) as compact JSON`
  })
}).annotations(strict)

/** `GET /api/session/{sessionID}/instructions/entries`: the session's entries in key order. */
export const list = HttpApiEndpoint.get("list", "/api/session/:sessionID/instructions/entries")
  .setPath(SessionPath)
  .addSuccess(Schema.Struct({ data: Schema.Array(InstructionEntryInfo) }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.instructions.entries.list")
  .annotate(OpenApi.Summary, "List instruction entries")
  .annotate(
    OpenApi.Description,
    "Extension. The session's instruction entries (client-supplied instruction texts keyed by name), in key order. They join the session's instructions at the next Step."
  )

/**
 * `PUT /api/session/{sessionID}/instructions/entries/{key}`: creates or replaces one entry; idempotent.
 * The model sees the change at the session's next Safe Step Boundary; an idle session is not woken.
 */
export const put = HttpApiEndpoint.put("put", "/api/session/:sessionID/instructions/entries/:key")
  .setPath(EntryPath)
  .setPayload(PutPayload)
  .addSuccess(Schema.Struct({ data: InstructionEntryInfo }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.instructions.entries.put")
  .annotate(OpenApi.Summary, "Set an instruction entry")
  .annotate(
    OpenApi.Description,
    "Extension. Creates or replaces the session's instruction entry `key`; idempotent. The model sees the change at the session's next Step boundary; an idle session is not woken."
  )

/** `DELETE /api/session/{sessionID}/instructions/entries/{key}`: removes one entry; idempotent. */
export const remove = HttpApiEndpoint.del("remove", "/api/session/:sessionID/instructions/entries/:key")
  .setPath(EntryPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.instructions.entries.remove")
  .annotate(OpenApi.Summary, "Remove an instruction entry")
  .annotate(
    OpenApi.Description,
    "Extension. Removes the session's instruction entry `key`; the model is told at the session's next Step boundary. Idempotent."
  )

export const group = HttpApiGroup.make("instructions")
  .add(list)
  .add(put)
  .add(remove)
  .annotate(OpenApi.Title, "sessions")
  .annotate(ClientProjection.Namespace, "instructions")
