export * as EventStream from "./event-stream.js"

import { HttpApiSchema } from "@effect/platform"
import { SchemaAST as AST, Context, Option, Schema } from "effect"

/*
 * Server-Sent Event streams in the HttpApi. Effect 3's HttpApi has no streaming success type, so a
 * stream endpoint declares:
 *
 * - a `text/event-stream` success whose *schema describes one event frame* (not the body as a whole):
 *   either the frame `{id, event, data}` with `data` the JSON text of the event (`frames`), or the event
 *   itself, sent as each frame's `data` (`events`). This is what the OpenAPI document shows and what
 *   the clients decode each frame with;
 * - the {@link Annotation} (how frames are laid out), read by the server and by codegen;
 * - the `x-effect-stream` extension on the OpenAPI media type ({@link openApi}), as in the reference.
 *
 * The server implements such an endpoint with `handleRaw` (the success schema is never used to encode
 * a body), and clients read it with a raw HttpClient: `HttpApiClient` would read the whole body.
 *
 * Wire rules shared by every stream:
 * - each event is one SSE frame `event: <type>` + `data: <JSON envelope>` (one line), plus `id:` when
 *   the framing has ids;
 * - comment lines (`: …`) may appear anywhere (heartbeats); every SSE parser ignores them;
 * - a stream the server has to end abnormally ends with one {@link failureEvent} frame whose `data` is
 *   a JSON {@link Failure}, then the body ends. A body that ends without one ended normally.
 */

export const contentType = "text/event-stream"

/** The `event:` name of the terminal failure frame, as named by the reference's `x-effect-stream`. */
export const failureEvent = "effect/httpapi/stream/failure"

/**
 * The `data` of a failure frame: the cause, as a list. Streams declare no typed failures (the
 * contract's `errorSchema` is `never`), so it holds `Die` (the server gave up on this stream, e.g. a
 * consumer too slow for its buffer; `defect` is `{_tag, message}`) or `Interrupt` entries.
 */
export const Failure = Schema.Array(
  Schema.Union(
    Schema.Struct({ _tag: Schema.Literal("Fail"), error: Schema.Never }),
    Schema.Struct({ _tag: Schema.Literal("Die"), defect: Schema.Unknown }),
    Schema.Struct({ _tag: Schema.Literal("Interrupt"), fiberId: Schema.NullOr(Schema.Number) })
  )
)
export type Failure = typeof Failure.Type

/**
 * How a stream endpoint lays out its frames:
 * - `frames`: the success schema is the frame `{id, event, data}`; clients decode a frame and yield
 *   its `data` (the envelope). `id` is the resume position (`Last-Event-ID`).
 * - `events`: the success schema is the envelope, sent as each frame's `data`; frames carry no `id`.
 */
export interface Declaration {
  readonly framing: "frames" | "events"
}

/** The declaration of a stream of {@link frames}. */
export const framesDeclaration: Declaration = { framing: "frames" }
/** The declaration of a stream of {@link events}. */
export const eventsDeclaration: Declaration = { framing: "events" }

/** Marks an endpoint as an SSE stream; see {@link Declaration}. */
export class Annotation extends Context.Tag("@opencode-ai/protocol/EventStream")<Annotation, Declaration>() {}

/** The stream declaration of an endpoint, when it is one. */
export const declarationOf = (endpoint: { readonly annotations: Context.Context<never> }): Declaration | undefined =>
  Context.getOrElse(endpoint.annotations, Annotation, () => undefined)

// The success is described as `text/event-stream` text, even though its schema is not a string schema:
// the schema documents one frame; no HttpApi codec ever reads or writes it (see the module comment).
const asEventStream = <S extends Schema.Schema.Any>(schema: S): S =>
  HttpApiSchema.withEncoding(schema as unknown as typeof Schema.String, { kind: "Text", contentType }) as unknown as S

/**
 * The success schema of a stream with ids: one frame `{id, event, data}`, `data` being the JSON text
 * of `event` (rendered as a string with `contentMediaType: application/json` and `contentSchema`).
 */
export const frames = <A, I, R>(event: Schema.Schema<A, I, R>) =>
  asEventStream(Schema.Struct({ id: Schema.String, event: Schema.String, data: Schema.parseJson(event) }))

/**
 * The success schema of a stream without ids: the event itself, sent as each frame's `data`. `event`
 * must carry an identifier (its component name). It is wrapped in a suspension with that identifier
 * because HttpApi splits a union success into one response per member (each with its own encoding),
 * while the stream's success is the union as a whole.
 */
export const events = <A, I, R>(event: Schema.Schema<A, I, R>) => {
  const identifier = Option.getOrThrowWith(
    AST.getIdentifierAnnotation(event.ast),
    () => new Error("EventStream.events: the event schema needs an identifier annotation")
  )
  return asEventStream(Schema.suspend(() => event).annotations({ identifier }))
}

// The reference's `x-effect-stream` (Effect 4's HttpApi stream metadata): SSE encoding, no typed
// stream errors, and the cause carried by the failure frame.
const xEffectStream = {
  encoding: "sse",
  causeSchema: {
    type: "array",
    items: {
      anyOf: [
        {
          type: "object",
          properties: { _tag: { type: "string", enum: ["Fail"] }, error: { not: {} } },
          required: ["_tag", "error"],
          additionalProperties: false
        },
        {
          type: "object",
          properties: { _tag: { type: "string", enum: ["Die"] }, defect: {} },
          required: ["_tag", "defect"],
          additionalProperties: false
        },
        {
          type: "object",
          properties: {
            _tag: { type: "string", enum: ["Interrupt"] },
            fiberId: { anyOf: [{ type: "number" }, { type: "null" }] }
          },
          required: ["_tag", "fiberId"],
          additionalProperties: false
        }
      ]
    }
  },
  errorSchema: { not: {} },
  failureEvent
} as const

/**
 * The OpenAPI transform of a stream endpoint (`.annotate(OpenApi.Transform, EventStream.openApi)`):
 * adds `x-effect-stream` to the operation's `text/event-stream` success content.
 */
export const openApi = (operation: Record<string, any>): Record<string, any> => {
  const responses = { ...operation.responses }
  for (const [status, response] of Object.entries<Record<string, any>>(responses)) {
    const media = response.content?.[contentType]
    if (!/^2\d\d$/.test(status) || media === undefined) continue
    responses[status] = {
      ...response,
      content: { ...response.content, [contentType]: { ...media, "x-effect-stream": xEffectStream } }
    }
  }
  return { ...operation, responses }
}
