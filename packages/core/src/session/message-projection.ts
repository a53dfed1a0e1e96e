export * as MessageProjection from "./message-projection.js"

/**
 * MessageProjection: a session's durable `session.next.*` events folded into the Session Messages a
 * client reads and the model is given (table `message`), and the session row kept current (cost,
 * tokens, agent, model, title, `time.updated`).
 *
 * {@link reduce} is the pure fold of one event into the message it targets; {@link apply} runs it
 * inside the transaction of the append that committed the events (through SessionEvents), so a
 * message never lags or leads the log. Events and the messages they make:
 *
 * ```
 *   prompted ─────────► user            context.updated ─► system        synthetic ─► synthetic
 *   agent.switched ───► agent-switched  model.switched ──► model-switched
 *   compaction.ended ─► compaction (summary + recent)
 *   step.started ─────► assistant ──(text | reasoning | tool)*──► step.ended (finish, cost, tokens)
 *                                                               └► step.failed (error, finish "error")
 *
 *   assistant tool content, keyed by callID:
 *     tool.input.started ─► pending("") ─tool.input.ended─► pending(raw text)
 *     tool.called ────────► running(input, {}, [])   (from pending, or directly)
 *     tool.progress ──────► running(structured, content replaced)
 *     tool.success ───────► completed               tool.failed ─► error (from pending or running)
 *     (a `StructuredOutput` call's success also sets the message's `structured` to its result)
 * ```
 *
 * `*.ended` events carry the full value, so text and reasoning are set from them, never from deltas
 * (which are live-only). Events that make no message (`prompt.admitted`, `moved`, `retried`, the
 * revert family, `compaction.started`, `title.updated`, `usage.recorded`) leave messages alone;
 * `shell.*` are not projected yet.
 *
 * A transition the log should never contain (an event for a missing or differently typed message, a
 * tool settled twice, a message created twice) is a broken invariant: {@link reduce} throws
 * {@link InvalidTransition} and {@link apply} dies, rolling the whole append back.
 */

import { SqlClient, SqlError, SqlSchema } from "@effect/sql"
import { Event, Identifier, type ProviderMetadata, type Session, SessionMessages } from "@opencode-ai/schema"
import { Effect, Option, ParseResult, Schema } from "effect"
import * as EventLog from "../event/event-log.js"
import { Traced } from "../observability/traced.js"
import { KeysetPage } from "../storage/keyset-page.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import { StructuredOutput } from "../structured/structured-output.js"
import * as RevertedMessages from "./reverted-messages.js"
import * as Sessions from "./sessions.js"
import * as StepCost from "./step-cost.js"

type Message = SessionMessages.SessionMessage
type Assistant = SessionMessages.SessionMessageAssistant
type Content = SessionMessages.SessionMessageAssistantContent
type Tool = SessionMessages.SessionMessageAssistantTool
type SessionEvent = Event.SessionDurableEvent

/** An event the projection cannot apply to the message it targets: the log broke an invariant. */
export class InvalidTransition extends Error {
  override readonly name = "InvalidTransition"
  constructor(
    readonly event: SessionEvent["type"],
    readonly messageID: string,
    reason: string
  ) {
    super(`${event} cannot apply to message ${messageID}: ${reason}`)
  }
}

// ── Decoding ────────────────────────────────────────────────────────────────────────────────────

/** The envelope schema of every durable `session.next.*` type. */
export const schemaByType: ReadonlyMap<string, Schema.Schema<SessionEvent, any>> = new Map(
  Event.SessionDurableEvent.members.map((member) => [
    member.fields.type.literals[0],
    member as Schema.Schema<SessionEvent, any>
  ])
)

/**
 * The typed data of each draft's encoded `data` made by {@link encodeData}, by that object: an event
 * this process encoded is not decoded again when it is projected. Weak, so an entry goes with its
 * draft.
 */
const typedData = new WeakMap<object, unknown>()

/**
 * `data` of the durable type `type`, encoded with its schema for a draft (invalid data is a defect:
 * the caller's bug). The encoded object remembers `data`, so that {@link decodeEvent} of the
 * committed envelope that carries it takes `data` as it is instead of decoding it back: the same
 * value, since the event log commits a draft's `data` object itself.
 */
export const encodeData = (type: string, data: unknown): unknown => {
  const schema = schemaByType.get(type) as unknown as Schema.Struct<{ data: Schema.Schema<unknown, unknown> }>
  const encoded = Schema.encodeSync(schema.fields.data)(data)
  if (typeof encoded === "object" && encoded !== null) typedData.set(encoded, data)
  return encoded
}

/**
 * A committed envelope as the typed durable event it holds. Fails for a type that is not a durable
 * `session.next.*` event or data that does not match its schema. An envelope whose `data` this
 * process encoded ({@link encodeData}) is not decoded: its `id` and `durable` are the log's own, and
 * its data is the typed value it was encoded from.
 */
export const decodeEvent = (envelope: EventLog.Envelope): Effect.Effect<SessionEvent, Error> => {
  const schema = schemaByType.get(envelope.type)
  if (schema === undefined) return Effect.fail(new Error(`${envelope.type} is not a durable session.next event`))
  const data = typeof envelope.data === "object" && envelope.data !== null ? typedData.get(envelope.data) : undefined
  if (data !== undefined) {
    return Effect.succeed({ id: envelope.id, type: envelope.type, durable: envelope.durable, data } as SessionEvent)
  }
  return Schema.decodeUnknown(schema)(envelope)
}

// ── The reducer ─────────────────────────────────────────────────────────────────────────────────

/** The id of the message `event` creates or changes, or undefined when it makes no message. */
export const target = (event: SessionEvent): Identifier.MessageID | undefined => {
  switch (event.type) {
    case "session.next.prompted":
    case "session.next.context.updated":
    case "session.next.synthetic":
    case "session.next.agent.switched":
    case "session.next.model.switched":
    case "session.next.compaction.ended":
      return event.data.messageID
    case "session.next.step.started":
    case "session.next.step.ended":
    case "session.next.step.failed":
    case "session.next.text.started":
    case "session.next.text.ended":
    case "session.next.reasoning.started":
    case "session.next.reasoning.ended":
    case "session.next.tool.input.started":
    case "session.next.tool.input.ended":
    case "session.next.tool.called":
    case "session.next.tool.progress":
    case "session.next.tool.success":
    case "session.next.tool.failed":
      return event.data.assistantMessageID
    default:
      return undefined
  }
}

/**
 * The message after `event`, given the message it targets as it was (`undefined` when it does not
 * exist yet). Pure. Only call it for events whose {@link target} is defined. Throws
 * {@link InvalidTransition} for a transition the log should never contain.
 *
 * A `prompted` for a user message that already exists returns it unchanged: it can only be a second
 * promotion of one prompt, which SessionInput's claim rejects (rolling the append back).
 */
export const reduce = (current: Message | undefined, event: SessionEvent): Message => {
  const id = target(event)
  if (id === undefined) throw new InvalidTransition(event.type, "(none)", "the event makes no message")
  const fail = (reason: string): never => {
    throw new InvalidTransition(event.type, id, reason)
  }
  const created = { id, time: { created: event.data.timestamp } }
  const fresh = <M extends Message>(message: M): M =>
    current === undefined ? message : fail(`message already exists (${current.type})`)

  switch (event.type) {
    case "session.next.prompted": {
      if (current?.type === "user") return current
      const { text, files, agents, format } = event.data.prompt
      return fresh({
        ...created,
        type: "user",
        text,
        ...(files === undefined ? {} : { files }),
        ...(agents === undefined ? {} : { agents }),
        ...(format === undefined ? {} : { format })
      })
    }
    case "session.next.context.updated":
      return fresh({ ...created, type: "system", text: event.data.text })
    case "session.next.synthetic":
      return fresh({ ...created, type: "synthetic", sessionID: event.data.sessionID, text: event.data.text })
    case "session.next.agent.switched":
      return fresh({ ...created, type: "agent-switched", agent: event.data.agent })
    case "session.next.model.switched":
      return fresh({ ...created, type: "model-switched", model: event.data.model })
    case "session.next.compaction.ended":
      return fresh({
        ...created,
        type: "compaction",
        reason: event.data.reason,
        summary: event.data.text,
        recent: event.data.recent
      })
    case "session.next.step.started":
      return fresh({
        ...created,
        type: "assistant",
        agent: event.data.agent,
        model: event.data.model,
        content: [],
        ...(event.data.snapshot === undefined ? {} : { snapshot: { start: event.data.snapshot } })
      })
    default:
      break
  }

  if (current === undefined) return fail("no such message (no step.started)")
  if (current.type !== "assistant") return fail(`not an assistant message (${current.type})`)
  const assistant: Assistant = current
  const at = event.data.timestamp

  const withContent = (content: ReadonlyArray<Content>): Assistant => ({ ...assistant, content })
  const indexOf = (type: Content["type"], itemID: string) =>
    assistant.content.findIndex((item) => item.type === type && item.id === itemID)
  const replace = (index: number, item: Content) =>
    withContent(assistant.content.map((old, i) => (i === index ? item : old)))
  const tool = (callID: string): [number, Tool] => {
    const index = indexOf("tool", callID)
    return index === -1 ? fail(`no tool call ${callID}`) : [index, assistant.content[index] as Tool]
  }
  const settled = (item: Tool) =>
    item.state.status === "completed" || item.state.status === "error"
      ? fail(`tool call ${item.id} already settled`)
      : item

  switch (event.type) {
    case "session.next.step.ended": {
      const { snapshot, files } = event.data
      const merged = {
        ...assistant.snapshot,
        ...(snapshot === undefined ? {} : { end: snapshot }),
        ...(files === undefined ? {} : { files })
      }
      return {
        ...assistant,
        time: { ...assistant.time, completed: at },
        finish: event.data.finish,
        cost: event.data.cost,
        tokens: event.data.tokens,
        ...(Object.keys(merged).length === 0 ? {} : { snapshot: merged })
      }
    }
    case "session.next.step.failed":
      // A failed (or interrupted) Step's finish is "error", as upstream projects it.
      return { ...assistant, time: { ...assistant.time, completed: at }, finish: "error", error: event.data.error }

    case "session.next.text.started":
      if (indexOf("text", event.data.textID) !== -1) return fail(`text ${event.data.textID} already started`)
      return withContent([...assistant.content, { type: "text", id: event.data.textID, text: "" }])
    case "session.next.text.ended": {
      // The full text; a block whose start was never recorded is still recorded whole.
      const item: Content = { type: "text", id: event.data.textID, text: event.data.text }
      const index = indexOf("text", event.data.textID)
      return index === -1 ? withContent([...assistant.content, item]) : replace(index, item)
    }

    case "session.next.reasoning.started": {
      if (indexOf("reasoning", event.data.reasoningID) !== -1)
        return fail(`reasoning ${event.data.reasoningID} already started`)
      const { providerMetadata } = event.data
      return withContent([
        ...assistant.content,
        {
          type: "reasoning",
          id: event.data.reasoningID,
          text: "",
          ...(providerMetadata === undefined ? {} : { providerMetadata }),
          time: { created: at }
        }
      ])
    }
    case "session.next.reasoning.ended": {
      const index = indexOf("reasoning", event.data.reasoningID)
      const before =
        index === -1 ? undefined : (assistant.content[index] as SessionMessages.SessionMessageAssistantReasoning)
      const providerMetadata = event.data.providerMetadata ?? before?.providerMetadata
      const item: Content = {
        type: "reasoning",
        id: event.data.reasoningID,
        text: event.data.text,
        ...(providerMetadata === undefined ? {} : { providerMetadata }),
        time: { created: before?.time?.created ?? at, completed: at }
      }
      return index === -1 ? withContent([...assistant.content, item]) : replace(index, item)
    }

    case "session.next.tool.input.started":
      if (indexOf("tool", event.data.callID) !== -1) return fail(`tool call ${event.data.callID} already exists`)
      return withContent([
        ...assistant.content,
        {
          type: "tool",
          id: event.data.callID,
          name: event.data.name,
          state: { status: "pending", input: "" },
          time: { created: at }
        }
      ])
    case "session.next.tool.input.ended": {
      const [index, item] = tool(event.data.callID)
      if (item.state.status !== "pending") return fail(`tool call ${item.id} is ${item.state.status}, not pending`)
      return replace(index, { ...item, state: { status: "pending", input: event.data.text } })
    }
    case "session.next.tool.called": {
      const { callID, input, provider } = event.data
      const running = { status: "running", input, structured: {}, content: [] } as const
      const index = indexOf("tool", callID)
      if (index === -1) {
        // A call whose arguments were not streamed (or came whole) starts here.
        return withContent([
          ...assistant.content,
          { type: "tool", id: callID, name: event.data.tool, provider, state: running, time: { created: at, ran: at } }
        ])
      }
      const item = assistant.content[index] as Tool
      if (item.state.status !== "pending") return fail(`tool call ${callID} is ${item.state.status}, not pending`)
      return replace(index, {
        ...item,
        name: event.data.tool,
        provider,
        state: running,
        time: { ...item.time, ran: at }
      })
    }
    case "session.next.tool.progress": {
      const [index, item] = tool(event.data.callID)
      if (item.state.status !== "running") return fail(`tool call ${item.id} is ${item.state.status}, not running`)
      return replace(index, {
        ...item,
        state: { ...item.state, structured: event.data.structured, content: event.data.content }
      })
    }
    case "session.next.tool.success": {
      const [index, item] = tool(event.data.callID)
      settled(item)
      if (item.state.status !== "running") return fail(`tool call ${item.id} is ${item.state.status}, not running`)
      const { structured, content, outputPaths, result } = event.data
      const completed = replace(index, {
        ...item,
        provider: providerAfter(item, event.data.provider),
        state: {
          status: "completed",
          input: item.state.input,
          content,
          structured,
          // Always present (an event recorded before it was always set decodes without it).
          outputPaths: outputPaths ?? [],
          ...(result === undefined ? {} : { result })
        },
        time: { ...item.time, completed: at }
      })
      // A successful StructuredOutput call's result is the message's Structured Output (already validated).
      return item.name === StructuredOutput.toolName ? { ...completed, structured } : completed
    }
    case "session.next.tool.failed": {
      const [index, item] = tool(event.data.callID)
      const state = settled(item).state
      const { error, result } = event.data
      return replace(index, {
        ...item,
        provider: providerAfter(item, event.data.provider),
        state: {
          status: "error",
          input: state.status === "running" ? state.input : parseObject(state.status === "pending" ? state.input : ""),
          content: state.status === "running" ? state.content : [],
          structured: state.status === "running" ? state.structured : {},
          error,
          ...(result === undefined ? {} : { result })
        },
        time: { ...item.time, completed: at }
      })
    }
    default:
      return fail("unhandled event")
  }
}

/** The tool's provider record after its settlement: the settlement's metadata is the result's. */
const providerAfter = (
  item: Tool,
  provider: { readonly executed: boolean; readonly metadata?: ProviderMetadata.LLMProviderMetadata | undefined }
): NonNullable<Tool["provider"]> => ({
  ...item.provider,
  executed: provider.executed,
  ...(provider.metadata === undefined ? {} : { resultMetadata: provider.metadata })
})

/** The raw argument text of a call that failed before it was parsed, as an object when it is one. */
const parseObject = (text: string): { readonly [key: string]: unknown } => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

/**
 * The session record after `event`: `step.ended` and `usage.recorded` add their cost and tokens to
 * the running totals (see StepCost.add); `title.updated` sets the title; `agent.switched` and
 * `model.switched` select the agent and model the next Step uses; `revert.staged` sets `revert` and
 * `revert.cleared` / `revert.committed` remove it; those and `prompted` and `step.failed` bump
 * `time.updated` (to the event's timestamp, never backwards). Any other event
 * returns `session` itself.
 */
export const reduceSession = (session: Session.SessionV2Info, event: SessionEvent): Session.SessionV2Info => {
  const touch = (next: Session.SessionV2Info): Session.SessionV2Info => ({
    ...next,
    time: { ...next.time, updated: Math.max(next.time.updated, event.data.timestamp) }
  })
  switch (event.type) {
    case "session.next.step.ended":
    case "session.next.usage.recorded":
      // Cost and tokens are running totals: a Step's and a side request's (compaction, title) alike.
      return touch({
        ...session,
        cost: StepCost.add(session.cost, event.data.cost),
        tokens: StepCost.addTokens(session.tokens, event.data.tokens)
      })
    case "session.next.title.updated":
      return touch({ ...session, title: event.data.title })
    case "session.next.agent.switched":
      return touch({ ...session, agent: event.data.agent })
    case "session.next.model.switched":
      return touch({ ...session, model: event.data.model })
    case "session.next.prompted": {
      // The first prompt names a session that still has its default title.
      const title = session.title.startsWith(Sessions.defaultTitlePrefix)
        ? Sessions.titleFromPrompt(event.data.prompt.text)
        : undefined
      return touch(title === undefined ? session : { ...session, title })
    }
    case "session.next.step.failed":
      return touch(session)
    case "session.next.revert.staged":
      return touch({ ...session, revert: event.data.revert })
    case "session.next.revert.cleared":
    case "session.next.revert.committed": {
      const { revert: _, ...rest } = session
      return touch(rest)
    }
    default:
      return session
  }
}

/** The event types {@link reduceSession} acts on; the session row is read only for these. */
const changesSession: ReadonlySet<string> = new Set<SessionEvent["type"]>([
  "session.next.step.ended",
  "session.next.usage.recorded",
  "session.next.title.updated",
  "session.next.step.failed",
  "session.next.agent.switched",
  "session.next.model.switched",
  "session.next.prompted",
  "session.next.revert.staged",
  "session.next.revert.cleared",
  "session.next.revert.committed"
])

// ── Persistence: table `message` (owned here) ───────────────────────────────────────────────────
//
// Every query over `message` is in this section. The operations run on the SqlClient in context, so
// inside a caller's transaction they use its connection. Rows decode through SqlSchema; an SQL error
// or a row that does not decode is a defect, made one by {@link defect} only.

const MessageJson = Schema.parseJson(SessionMessages.SessionMessage)
const decodeMessage = Schema.decodeUnknown(MessageJson)
const encodeMessage = Schema.encode(MessageJson)

/**
 * Recently decoded messages by id, each with the exact `info` JSON it was decoded from. A Step reads
 * its whole context ({@link context}), so without this a long session would parse and decode its
 * history again at every Step. Decoding is a pure function of the JSON, so an entry cannot go stale:
 * a row whose JSON changed simply misses, whatever process or transaction changed it. Bounded by
 * the JSON it holds, least recently used evicted first.
 */
const decoded = new Map<string, { readonly info: string; readonly message: Message }>()
let decodedChars = 0
const decodedCapacityChars = 8 * 1024 * 1024

/** The memo's message for row `id` when it was decoded from exactly `info` (then most recently used). */
const memoized = (id: string, info: string): Message | undefined => {
  const hit = decoded.get(id)
  if (hit === undefined || hit.info !== info) return undefined
  decoded.delete(id)
  decoded.set(id, hit)
  return hit.message
}

const decodeRow = (row: {
  readonly id: string
  readonly info: string
}): Effect.Effect<Message, ParseResult.ParseError> => {
  const known = memoized(row.id, row.info)
  if (known !== undefined) return Effect.succeed(known)
  return Effect.map(decodeMessage(row.info), (message) => {
    const hit = decoded.get(row.id)
    if (hit !== undefined) {
      decoded.delete(row.id)
      decodedChars -= hit.info.length
    }
    if (row.info.length <= decodedCapacityChars) {
      decoded.set(row.id, { info: row.info, message })
      decodedChars += row.info.length
      for (const [id, entry] of decoded) {
        if (decodedChars <= decodedCapacityChars) break
        decoded.delete(id)
        decodedChars -= entry.info.length
      }
    }
    return message
  })
}

/**
 * The contexts last read (see {@link context}), per session, for one database (one SqlClient): a
 * database file opened again starts empty. An entry is replaced only by a read that started from it,
 * so two reads of one session at once cannot store an older state over a newer one. Bounded by the
 * JSON of the messages held, the least recently read session evicted first; a session whose context
 * alone exceeds the bound is not kept.
 */
interface ContextCache {
  readonly get: (sessionID: string) => ContextEntry | undefined
  readonly set: (sessionID: string, entry: ContextEntry, from: ContextEntry | undefined) => void
  readonly delete: (sessionID: string) => void
  /** Drops every entry. */
  readonly clear: () => void
  /** The JSON characters of the messages held. */
  readonly chars: () => number
}

const contextCapacityChars = 16 * 1024 * 1024
const contextCaches = new WeakMap<SqlClient.SqlClient, ContextCache>()
/** Every context cache made, held weakly (a closed client's cache goes with it), for {@link releaseCaches}. */
const everyContextCache = new Set<WeakRef<ContextCache>>()

const contextCache = (sql: SqlClient.SqlClient): ContextCache => {
  const known = contextCaches.get(sql)
  if (known !== undefined) return known
  const entries = new Map<string, ContextEntry>()
  let chars = 0
  const remove = (sessionID: string) => {
    const entry = entries.get(sessionID)
    if (entry === undefined) return
    entries.delete(sessionID)
    chars -= entry.chars
  }
  const cache: ContextCache = {
    get: (sessionID) => entries.get(sessionID),
    set: (sessionID, entry, from) => {
      if (entries.get(sessionID) !== from) return
      remove(sessionID)
      if (entry.chars > contextCapacityChars) return
      entries.set(sessionID, entry)
      chars += entry.chars
      for (const [id] of entries) {
        if (chars <= contextCapacityChars) break
        remove(id)
      }
    },
    delete: remove,
    clear: () => {
      entries.clear()
      chars = 0
    },
    chars: () => chars
  }
  contextCaches.set(sql, cache)
  everyContextCache.add(new WeakRef(cache))
  return cache
}

/** Runs `f` on every context cache still reachable, forgetting those that are gone. */
const forEachContextCache = (f: (cache: ContextCache) => void) => {
  for (const ref of everyContextCache) {
    const cache = ref.deref()
    if (cache === undefined) everyContextCache.delete(ref)
    else f(cache)
  }
}

/**
 * Drops everything the read caches hold: the decoded messages ({@link decoded}) and every session's
 * context (see {@link context}); returns the characters of JSON they held. Both are pure caches of
 * stored rows, so nothing is lost: the next read decodes and fills them again (for a long history, a
 * few milliseconds once). For a host that has gone quiet (see the server's Idle Collection), whose
 * caches would otherwise keep up to 24 M characters of JSON and their decoded messages for as long as
 * it runs. A read in flight meanwhile is not stored (an entry is replaced only by a read that started
 * from it).
 */
export const releaseCaches = (): number => {
  let chars = decodedChars
  decoded.clear()
  decodedChars = 0
  forEachContextCache((cache) => {
    chars += cache.chars()
    cache.clear()
  })
  return chars
}

/** SQL errors and rows that do not decode are broken storage: defects. */
const defect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, StorageError>, R> =>
  Effect.catchAll(effect, (error) =>
    error instanceof SqlError.SqlError || ParseResult.isParseError(error)
      ? Effect.die(error)
      : Effect.fail(error as Exclude<E, StorageError>)
  )
type StorageError = SqlError.SqlError | ParseResult.ParseError

/** Runs `query` against the SqlClient in context. */
const withSql = <A, E, R>(query: (sql: SqlClient.SqlClient) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, query)

/** A stored message row: the message and where it sits. */
export interface Stored {
  readonly sessionID: Identifier.SessionID
  readonly seq: number
  readonly message: Message
}

/** A stored `info` column as a message; a row that does not decode is corrupt (defect). */
export const decodeInfo = (info: string): Effect.Effect<Message> => Effect.orDie(decodeMessage(info))

/** The message types of a conversation: what a Step answers or continues after. */
const conversation: ReadonlySet<string> = new Set(["user", "synthetic", "assistant"])

/**
 * The `pending_work` column of a message row: 2 for an assistant message whose Step is still open (no
 * finish, no error); 1 when a Step should continue after it, were it the session's latest conversation
 * message (a user or synthetic message, or an assistant message that finished with tool calls); 0
 * otherwise. Start-up Recovery finds unfinished work through it (see {@link pendingWorkSessions}).
 */
export const pendingWork = (message: Message): 0 | 1 | 2 => {
  if (message.type === "user" || message.type === "synthetic") return 1
  if (message.type !== "assistant" || message.error !== undefined) return 0
  if (message.finish === undefined) return 2
  return message.finish === "tool-calls" ? 1 : 0
}

const InfoRow = Schema.Struct({ info: Schema.String })
const IdInfoRow = Schema.Struct({ id: Schema.String, info: Schema.String })
const SessionRow = Schema.Struct({ session_id: Identifier.SessionID })

/**
 * The sessions that may have unfinished work: an open Step, or a latest conversation message a Step
 * should continue after (a superset: an earlier mark may remain until the next conversation message).
 * One read of a partial index: proportional to unfinished work, not to history.
 */
export const pendingWorkSessions = Traced.fn("MessageProjection.pendingWorkSessions")(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* SqlSchema.findAll({
    Request: Schema.Void,
    Result: SessionRow,
    execute: () => sql`SELECT DISTINCT session_id FROM message WHERE pending_work <> 0 ORDER BY session_id`
  })(undefined).pipe(Effect.orDie)
  return rows.map((row) => row.session_id)
})

/**
 * The session's assistant messages whose Step is still open, oldest first, each with the seq of the
 * event that created it (the Step's first).
 */
export const openSteps = Traced.fn("MessageProjection.openSteps")(function* (sessionID: Identifier.SessionID) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* SqlSchema.findAll({
    Request: Identifier.SessionID,
    Result: Schema.Struct({ info: Schema.String, seq: Schema.Number }),
    execute: (id) => sql`
      SELECT info, seq FROM message WHERE session_id = ${id} AND pending_work <> 0 AND pending_work = 2 ORDER BY seq`
  })(sessionID).pipe(Effect.orDie)
  return yield* Effect.forEach(rows, (row) =>
    Effect.map(decodeInfo(row.info), (message) => ({ message, seq: row.seq }))
  )
})

/** The session's latest conversation message (user, synthetic or assistant), if any. */
export const lastConversation = Traced.fn("MessageProjection.lastConversation")(function* (
  sessionID: Identifier.SessionID
) {
  const sql = yield* SqlClient.SqlClient
  const row = yield* SqlSchema.findOne({
    Request: Identifier.SessionID,
    Result: InfoRow,
    execute: (id) => sql`
      SELECT info FROM message WHERE session_id = ${id} AND type IN ('user', 'synthetic', 'assistant')
      ORDER BY seq DESC LIMIT 1`
  })(sessionID).pipe(Effect.orDie)
  return Option.isNone(row) ? undefined : yield* decodeInfo(row.value.info)
})

const StoredRow = Schema.Struct({ session_id: Identifier.SessionID, seq: Schema.Number, info: Schema.String })
const toStored = (row: typeof StoredRow.Type) =>
  Effect.map(decodeMessage(row.info), (message): Stored => ({ sessionID: row.session_id, seq: row.seq, message }))

/** The message `messageID` wherever it is, if it exists. */
const load = (messageID: Identifier.MessageID) =>
  withSql((sql) => selectStoredOn(sql).all([messageID])).pipe(
    Effect.flatMap(([row]) =>
      row === undefined ? Effect.succeedNone : Effect.asSome(Effect.flatMap(decodeStoredRow(row), toStored))
    )
  )
const selectStoredOn = PreparedSql.perClient("SELECT session_id, seq, info FROM message WHERE id = ?")
const decodeStoredRow = Schema.decodeUnknown(StoredRow)

/** Whether a message of any session has the id `messageID` (an id a client may not reuse). */
export const exists = (messageID: Identifier.MessageID): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ found: Schema.Number }),
      execute: (id) => sql`SELECT 1 AS found FROM message WHERE id = ${id}`
    })(messageID)
  ).pipe(
    Effect.map((rows) => rows.length > 0),
    defect
  )

/** The session's message `messageID` with its seq; none when it does not exist or is another session's. */
export const find = (
  sessionID: Identifier.SessionID,
  messageID: Identifier.MessageID
): Effect.Effect<Option.Option<Stored>, never, SqlClient.SqlClient> =>
  Effect.map(
    load(messageID),
    Option.filter((stored) => stored.sessionID === sessionID)
  ).pipe(defect)

/** The session's assistant messages from `seq` on, in order. */
export const assistantsFrom = (
  sessionID: Identifier.SessionID,
  seq: number
): Effect.Effect<ReadonlyArray<Assistant>, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findAll({
      Request: Schema.Struct({ sessionID: Identifier.SessionID, seq: Schema.Number }),
      Result: IdInfoRow,
      execute: (request) => sql`
        SELECT id, info FROM message WHERE session_id = ${request.sessionID} AND seq >= ${request.seq} AND type = 'assistant'
        ORDER BY seq`
    })({ sessionID, seq })
  ).pipe(
    Effect.flatMap(Effect.forEach(decodeRow)),
    Effect.map((messages) => messages.filter((message): message is Assistant => message.type === "assistant")),
    defect
  )

/**
 * Session History's messages, oldest first: from the latest compaction that no committed revert took
 * out (all messages when there is none), without system messages at or before `baselineSeq`, and
 * without the messages a committed revert took out (RevertedMessages).
 *
 * A Step reads this at every Safe Step Boundary, so it is kept per session (see {@link ContextCache})
 * and, after the first read, each read takes only the rows written since the previous one: one
 * indexed statement, whatever the length of history. Each read is one statement, so one snapshot:
 * the log seq it reads and the rows it returns agree. Inside a transaction the cache is neither read
 * nor written (the transaction may yet roll back).
 */
export const context = (
  sessionID: Identifier.SessionID,
  baselineSeq: number
): Effect.Effect<ReadonlyArray<Message>, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inTransaction = Option.isSome(yield* Effect.serviceOption(SqlClient.TransactionConnection))
    const cache = inTransaction ? undefined : contextCache(sql)
    const cached = cache?.get(sessionID)
    const entry =
      (cached === undefined ? undefined : yield* readChanges(sql, sessionID, cached)) ??
      (yield* readContext(sql, sessionID))
    if (cache !== undefined) {
      if (entry.ranges.length === entry.reverts) cache.set(sessionID, entry, cached)
      else cache.delete(sessionID)
    }
    const messages: Array<Message> = []
    for (const row of entry.rows) {
      if (row.type !== "system" || row.seq > baselineSeq) messages.push(row.message)
    }
    return messages
  }).pipe(defect)

/** A context row, decoded. */
interface ContextRow {
  readonly id: string
  readonly seq: number
  readonly type: string
  readonly message: Message
  readonly chars: number
}

/**
 * A session's context as of its log seq `version`: every row from the latest compaction on that no
 * reverted range holds (system messages included, filtered per read), when the session had `reverts`
 * reverted ranges. `ranges` are those ranges; an entry without all of them (a revert committed
 * between the two reads of a whole read) is not kept. Immutable: a read derives a new entry.
 */
interface ContextEntry {
  readonly version: number
  readonly reverts: number
  readonly ranges: ReadonlyArray<{ readonly fromSeq: number; readonly toSeq: number }>
  readonly rows: ReadonlyArray<ContextRow>
  readonly chars: number
}

/** The header both statements start with: the session's log seq and how many reverted ranges it has. */
const contextHeader = (sql: SqlClient.SqlClient, sessionID: Identifier.SessionID) => sql`
  (SELECT ${EventLog.lastSeqFragment(sql, sessionID)} AS version,
    ${RevertedMessages.countFragment(sql, sessionID)} AS reverts) h`

/** The whole context: the header, then the rows (none when the session has no messages). */
const readContext = (sql: SqlClient.SqlClient, sessionID: Identifier.SessionID) =>
  PreparedSql.valuesOf(
    sql,
    sql`
    SELECT h.version, h.reverts, m.id, m.seq, m.type, m.info FROM ${contextHeader(sql, sessionID)}
    LEFT JOIN message m ON m.session_id = ${sessionID}
      AND m.seq >= coalesce((
        SELECT max(c.seq) FROM message c
        WHERE c.session_id = ${sessionID} AND c.type = 'compaction'
          AND ${RevertedMessages.notReverted(sql, sessionID, "c")}
      ), 0)
      AND ${RevertedMessages.notReverted(sql, sessionID, "m")}
    ORDER BY m.seq`
  ).pipe(
    Effect.flatMap((values) =>
      values[0]?.[1] === 0
        ? toEntry(values, [], [], () => true)
        : Effect.flatMap(RevertedMessages.seqRanges(sessionID), (ranges) => toEntry(values, [], ranges, () => true))
    ),
    Effect.provideService(SqlClient.SqlClient, sql)
  )

/**
 * The rows written since `cached` was read, merged into it, less those before the context's start
 * (an earlier compaction's) or in a reverted range; none (read the whole context) when a revert or a
 * compaction was committed since, since those move the context's bounds.
 */
const readChanges = (sql: SqlClient.SqlClient, sessionID: Identifier.SessionID, cached: ContextEntry) =>
  PreparedSql.valuesOf(
    sql,
    sql`
    SELECT h.version, h.reverts, m.id, m.seq, m.type, m.info FROM ${contextHeader(sql, sessionID)}
    LEFT JOIN message m ON m.session_id = ${sessionID} AND m.changed_seq > ${cached.version}
    ORDER BY m.seq`
  ).pipe(
    Effect.flatMap((values) => {
      const [version, reverts] = values[0] ?? []
      if (reverts !== cached.reverts || typeof version !== "number" || version < cached.version) {
        return Effect.succeed(undefined)
      }
      if (version === cached.version && values.length === 1 && values[0]![2] === null) return Effect.succeed(cached)
      if (values.some((row) => row[4] === "compaction")) return Effect.succeed(undefined)
      const first = cached.rows[0]
      const start = first !== undefined && first.type === "compaction" ? first.seq : 0
      const { ranges } = cached
      return toEntry(
        values,
        cached.rows,
        ranges,
        (seq) => seq >= start && !ranges.some((range) => seq >= range.fromSeq && seq <= range.toSeq)
      )
    })
  )

/**
 * The entry for a statement's `[version, reverts, id, seq, type, info]` rows (the header repeated on
 * each; one row of the header alone when no message matched): the rows whose seq is `inContext`,
 * merged into `base` (replacing a row by id, keeping seq order). Rows are checked by hand and
 * decoded through the memo.
 */
const toEntry = (
  values: ReadonlyArray<ReadonlyArray<unknown>>,
  base: ReadonlyArray<ContextRow>,
  ranges: ContextEntry["ranges"],
  inContext: (seq: number) => boolean
): Effect.Effect<ContextEntry, ParseResult.ParseError> => {
  const [version, reverts] = values[0] ?? []
  if (typeof version !== "number" || typeof reverts !== "number") {
    return Effect.dieMessage(`MessageProjection: unexpected context header (${typeof version}, ${typeof reverts})`)
  }
  return Effect.map(
    Effect.forEach(
      values.filter((row) => row[2] !== null && !(typeof row[3] === "number" && !inContext(row[3]))),
      ([, , id, seq, type, info]) =>
        typeof id !== "string" || typeof seq !== "number" || typeof type !== "string" || typeof info !== "string"
          ? Effect.dieMessage(`MessageProjection: a stored message row has unexpected column types`)
          : Effect.map(
              decodeRow({ id, info }),
              (message): ContextRow => ({ id, seq, type, message, chars: info.length })
            )
    ),
    (changed): ContextEntry => {
      const rows = merged(base, changed)
      let chars = 0
      for (const row of rows) chars += row.chars
      return { version, reverts, ranges, rows, chars }
    }
  )
}

/** The index of the row of `seq` in `rows` (in seq order), or -1. */
const indexOfSeq = (rows: ReadonlyArray<ContextRow>, seq: number): number => {
  let low = 0
  let high = rows.length - 1
  while (low <= high) {
    const middle = (low + high) >>> 1
    const at = rows[middle]!.seq
    if (at === seq) return middle
    if (at < seq) low = middle + 1
    else high = middle - 1
  }
  return -1
}

/**
 * `base` with `changed` merged in, both in seq order: a changed row replaces the row of its id, any
 * other joins in seq order. A message keeps its seq once written (unique in its session; only a
 * migration renumbers, before anything is read), so a changed row is found by its seq and the new
 * ones come after the last: a read costs the rows that changed, not the length of the history. Rows
 * that do not fit that (none are expected) are merged by id.
 */
const merged = (base: ReadonlyArray<ContextRow>, changed: ReadonlyArray<ContextRow>): ReadonlyArray<ContextRow> => {
  if (base.length === 0) return changed
  const lastSeq = base[base.length - 1]!.seq
  let replaced: Array<ContextRow> | undefined
  const added: Array<ContextRow> = []
  for (const row of changed) {
    if (row.seq > lastSeq) {
      added.push(row)
      continue
    }
    const at = indexOfSeq(base, row.seq)
    if (at === -1 || base[at]!.id !== row.id) return mergedByID(base, changed)
    replaced ??= [...base]
    replaced[at] = row
  }
  const rows = replaced ?? base
  return added.length === 0 ? rows : [...rows, ...added]
}

/** {@link merged} by id: each changed row replaces the row of its id, the others are sorted in by seq. */
const mergedByID = (base: ReadonlyArray<ContextRow>, changed: ReadonlyArray<ContextRow>): ReadonlyArray<ContextRow> => {
  const byID = new Map(changed.map((row) => [row.id, row]))
  const rows = base.map((row) => byID.get(row.id) ?? row)
  for (const row of base) byID.delete(row.id)
  return byID.size === 0 ? rows : [...rows, ...byID.values()].sort((a, b) => a.seq - b.seq)
}

/** A message page query (see SessionHistory.messages): the session, the order, the size and the anchor. */
export interface PageQuery {
  readonly sessionID: Identifier.SessionID
  readonly order: "asc" | "desc"
  readonly limit: number
  /** The key the page continues from, and on which side of it the page lies; none for a first page. */
  readonly anchor?: PageKey | undefined
  readonly direction: "next" | "previous"
}

/** A page as stored: the messages' JSON in query order and the keys of the neighbouring pages' anchors. */
export type StoredPage = KeysetPage.Stored<PageKey>

/** A message page's keyset key: the message's seq, then its id. */
export interface PageKey {
  readonly seq: number
  readonly id: string
}

/** A message page's key columns: its seq, then its id. */
const pageKey = ["seq", "id"]
const readPage = KeysetPage.reader(
  pageKey,
  Schema.Struct({ id: Schema.String, seq: Schema.NumberFromString }),
  (row): PageKey => ({ seq: row.seq, id: row.id })
)
const pageEntry = KeysetPage.entry(pageKey)

/**
 * One page of the session's messages as stored, keyset-anchored on `(seq, id)` (see KeysetPage: a
 * first page is one indexed query, a continuation one statement that also says whether anything lies
 * on its anchor's far side).
 */
export const page = (query: PageQuery): Effect.Effect<StoredPage, never, SqlClient.SqlClient> =>
  withSql((sql) => pageOn(sql, query))

/** {@link page} on `sql` itself, for a caller that holds the client (no SqlClient in context). */
export const pageOn = (sql: SqlClient.SqlClient, query: PageQuery): Effect.Effect<StoredPage> =>
  Effect.suspend(() => {
    const { sessionID } = query
    const ascending = (forward: boolean) => (query.order === "asc") === forward
    // Strictly past the key in the walking direction, or (`inclusive`) from the key's own row on: a
    // range on seq refined on the key's seq, so the index is entered at the key (see Sessions.pageOn).
    const past = (key: PageKey, forward: boolean, inclusive: boolean) => {
      const up = ascending(forward)
      const id = sql.literal(up ? (inclusive ? ">=" : ">") : inclusive ? "<=" : "<")
      return up
        ? sql`(seq >= ${key.seq} AND (seq > ${key.seq} OR id ${id} ${key.id}))`
        : sql`(seq <= ${key.seq} AND (seq < ${key.seq} OR id ${id} ${key.id}))`
    }
    const beyond = (key: PageKey, forward: boolean) => past(key, forward, false)
    const forward = query.direction === "next"
    const sort = sql.literal(ascending(forward) ? "ASC" : "DESC")
    const order = sql`ORDER BY seq ${sort}, id ${sort} LIMIT ${query.limit + 1}`
    const entry = sql.literal(pageEntry)
    return readPage(sql, {
      limit: query.limit,
      direction: query.direction,
      anchor: query.anchor,
      first: sql`SELECT ${entry} FROM message WHERE session_id = ${sessionID} ${order}`,
      continuation: (anchor) => sql`
        SELECT CASE WHEN EXISTS (
          SELECT 1 FROM message WHERE session_id = ${sessionID} AND ${past(anchor, !forward, true)}
        ) THEN 1 ELSE 0 END || ' ' || ${entry} FROM message
        WHERE session_id = ${sessionID} AND ${beyond(anchor, forward)} ${order}`,
      beyond: (anchor) =>
        sql`SELECT 1 AS found FROM message WHERE session_id = ${sessionID} AND ${beyond(anchor, !forward)} LIMIT 1`
    })
  }).pipe(defect)

/**
 * The Managed Tool Output Files the sessions' completed tool calls name (`outputPaths`), each once, not
 * yet filtered by ownership: what Session Delete removes with the sessions.
 */
export const outputPaths = (
  sessionIDs: ReadonlyArray<Identifier.SessionID>
): Effect.Effect<ReadonlyArray<string>, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: InfoRow,
      execute: (ids) => sql`SELECT info FROM message WHERE session_id IN ${sql.in(ids)} AND type = 'assistant'`
    })(sessionIDs)
  ).pipe(
    Effect.flatMap(Effect.forEach((row) => decodeMessage(row.info))),
    Effect.map((messages) => {
      const paths = new Set<string>()
      for (const message of messages) {
        if (message.type !== "assistant") continue
        for (const item of message.content) {
          if (item.type === "tool" && item.state.status === "completed") {
            for (const file of item.state.outputPaths ?? []) paths.add(file)
          }
        }
      }
      return [...paths]
    }),
    defect
  )

const insertMessageOn = PreparedSql.perClient(
  `INSERT INTO message (id, session_id, seq, type, info, time_created, pending_work, changed_seq)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
)
const updateMessageOn = PreparedSql.perClient(
  "UPDATE message SET info = ?, type = ?, changed_seq = ?, pending_work = ? WHERE id = ?"
)
/** The same for a message marked for continuation (1): a mark a later conversation message cleared stays cleared. */
const updateMarkedOn = PreparedSql.perClient(
  `UPDATE message SET info = ?, type = ?, changed_seq = ?,
  pending_work = CASE WHEN pending_work = 0 THEN 0 ELSE 1 END WHERE id = ?`
)
/**
 * Clears the continuation marks before a new conversation message, through the partial index of pending
 * work (`+seq` keeps the planner off the (session_id, seq) index, which would read the session's whole
 * history before `seq`).
 */
const clearMarksOn = PreparedSql.perClient(
  "UPDATE message SET pending_work = 0 WHERE session_id = ? AND pending_work <> 0 AND pending_work = 1 AND +seq < ?"
)

/**
 * Applies committed events to the projection, inside the caller's SQL transaction (the append's
 * projection hook; SessionEvents does this for every session event). Events of other aggregates'
 * types (`session.created`) are skipped. Each message is read at most once and written once per
 * call, with `seq` = the seq of the event that created it and `changed_seq` that of the last event
 * that changed it. An undecodable event, an event whose
 * `sessionID` is not its aggregate, or an {@link InvalidTransition} is a defect. The session row
 * must exist (SessionEvents checks it).
 */
export const apply = Effect.fnUntraced(function* (committed: ReadonlyArray<EventLog.Envelope>) {
  const sql = yield* SqlClient.SqlClient
  // Each row read or written, with the seq of the last event that changed it.
  const touched = new Map<string, Stored & { readonly created: boolean; readonly changedSeq: number }>()
  const latestConversation = new Map<string, number>()
  const sessions = new Map<string, { readonly before: Session.SessionV2Info; readonly after: Session.SessionV2Info }>()

  const loadSession = (id: Identifier.SessionID) =>
    Effect.flatMap(Sessions.find(id), (found) =>
      Option.isNone(found) ? Effect.dieMessage(`session ${id} has no row`) : Effect.succeed(found.value)
    )

  for (const envelope of committed) {
    if (!envelope.type.startsWith("session.next.")) continue
    const event = yield* decodeEvent(envelope).pipe(Effect.orDie)
    const sessionID = event.data.sessionID
    if (sessionID !== envelope.durable.aggregateID) {
      return yield* Effect.dieMessage(
        `${event.type} for session ${sessionID} appended to ${envelope.durable.aggregateID}`
      )
    }

    const id = target(event)
    if (id !== undefined) {
      const before =
        touched.get(id) ??
        Option.getOrUndefined(
          yield* load(id).pipe(
            Effect.map(Option.map((stored) => ({ ...stored, created: false, changedSeq: 0 }))),
            defect
          )
        )
      if (before !== undefined && before.sessionID !== sessionID) {
        return yield* Effect.dieMessage(`message ${id} belongs to another session`)
      }
      const message = yield* Effect.try({
        try: () => reduce(before?.message, event),
        catch: (error) => error
      }).pipe(Effect.orDie)
      touched.set(id, {
        sessionID,
        seq: before?.seq ?? envelope.durable.seq,
        message,
        created: before === undefined || before.created,
        changedSeq: envelope.durable.seq
      })
    }

    if (changesSession.has(event.type)) {
      const session =
        sessions.get(sessionID) ??
        (yield* Effect.map(loadSession(sessionID), (info) => ({ before: info, after: info })))
      sessions.set(sessionID, { before: session.before, after: reduceSession(session.after, event) })
    }
  }

  for (const [id, row] of touched) {
    const info = yield* encodeMessage(row.message).pipe(Effect.orDie)
    if (row.created) {
      yield* insertMessageOn(sql)
        .run([
          id,
          row.sessionID,
          row.seq,
          row.message.type,
          info,
          row.message.time.created,
          pendingWork(row.message),
          row.changedSeq
        ])
        .pipe(Effect.orDie)
      if (conversation.has(row.message.type)) {
        latestConversation.set(row.sessionID, Math.max(latestConversation.get(row.sessionID) ?? 0, row.seq))
      }
    } else {
      const work = pendingWork(row.message)
      yield* (
        work === 1
          ? updateMarkedOn(sql).run([info, row.message.type, row.changedSeq, id])
          : updateMessageOn(sql).run([info, row.message.type, row.changedSeq, work, id])
      ).pipe(Effect.orDie)
    }
  }
  // A new conversation message is what a Step continues after now: earlier marks no longer apply.
  for (const [sessionID, seq] of latestConversation) {
    yield* clearMarksOn(sql).run([sessionID, seq]).pipe(Effect.orDie)
  }

  for (const { before, after } of sessions.values()) {
    if (after !== before) yield* Sessions.store(after)
  }
})
