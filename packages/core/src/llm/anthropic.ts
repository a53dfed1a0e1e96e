export * as Anthropic from "./anthropic.js"

/**
 * The Anthropic Messages adapter: `POST {baseURL}/messages`, streamed.
 *
 * Request ({@link body}):
 * - `model`, `max_tokens` (Generation Controls `maxOutputTokens`, else {@link defaultMaxTokens}: the
 *   protocol requires it, and the runner should pass the model's output limit; see thinking below);
 * - `system`: the request's system text as one text block (omitted when empty);
 * - `messages`: the lowered history (see `InstructionLowering`), consecutive same-role turns merged
 *   into one (the API wants alternating roles):
 *   - tool results become `tool_result` blocks (`is_error` when failed) of a user turn, in the order of
 *     the calls they answer, before any text that joins that turn; a result that returns files has
 *     an array `content`: its text block, then an `image` / `document` block per file;
 *   - user file parts: images as `image` blocks, PDFs as `document` blocks, with a `base64` source
 *     for a `data:` URL (`media_type`, `data`) and a `url` source otherwise;
 *   - assistant reasoning is sent natively only when the part is `replayable` and carries this
 *     protocol's Native Continuation Metadata: a `thinking` block with its `signature`, or a
 *     `redacted_thinking` block with its `data`. Otherwise non-empty visible reasoning becomes an
 *     ordinary `text` block and redacted reasoning is dropped;
 *   - empty text blocks are dropped (the API rejects them);
 * - prompt caching: the system block and the last block of the last message carry
 *   `cache_control: {type: "ephemeral"}` (with `ttl: "1h"` when the Model Request Option `cacheTtl`
 *   is `1h`), so the stable prefix (tools, system, the Instruction Baseline, the history so far) is
 *   read from the cache on the next step;
 * - `tools` (`input_schema`) and `tool_choice` (`auto`, `any` for required, `none`, `tool`) only when
 *   there are tools; `parallelToolCalls: false` adds `disable_parallel_tool_use: true` to the tool
 *   choice (`auto` when the request names none; not with `none`, which cannot carry it);
 * - extended thinking ({@link thinking}): on when the Model Request Options ask for it (a
 *   `thinkingBudget`, else a `reasoningEffort` other than `none` through {@link effortBudgets}, else
 *   `thinking: true` with the `medium` budget) and `thinking` is not `false`; sent as
 *   `thinking: {type: "enabled", budget_tokens}`. Left out where the API refuses it: with a forced
 *   tool choice, and when the request continues a tool loop whose assistant turn has no thinking
 *   block first (it was written without thinking). The API counts thinking in `max_tokens`, wants the
 *   budget at least {@link minimumBudget} and below `max_tokens`: with a `maxOutputTokens`, the budget
 *   is cut to leave {@link answerReserve} tokens for the answer (no thinking when even the minimum
 *   does not fit); without one, `max_tokens` is the budget plus {@link defaultMaxTokens}. With
 *   thinking on, `temperature` and `top_k` are not sent and `top_p` only from 0.95 up (the API
 *   rejects other sampling changes while thinking);
 * - Generation Controls: `temperature`, `top_p`, `top_k`, `stopSequences` → `stop_sequences`. The
 *   protocol has no seed or penalties, so `seed`, `presencePenalty`, `frequencyPenalty` are not sent;
 * - Model Request Options: `serviceTier` → `service_tier`, and the above. Not sent (no such field in
 *   Messages): `reasoningSummary`, `textVerbosity`, `store`, `include`, `promptCacheKey`,
 *   `includeThoughts`;
 * - `stream: true`; then the `"anthropic"` compatibility body fields, verbatim (they win over the
 *   above).
 * Headers: `content-type`, `x-api-key` when there is a key, `anthropic-version: 2023-06-01`, the
 * provider's configured headers, then the request's headers (later wins).
 *
 * Stream ({@link decoder}): `message_start` (input and cache usage), `content_block_start` /
 * `content_block_delta` / `content_block_stop` for `text`, `thinking` (`thinking_delta`,
 * `signature_delta` → the signature on `reasoning-end`), `redacted_thinking` (its data on
 * `reasoning-end`) and `tool_use` (`input_json_delta`; the call is complete at its block stop),
 * `message_delta` (stop reason, final usage), `message_stop` (done), `ping`, and `error` (fails the
 * stream with the classified error). Usage: `input_tokens` → input, `cache_read_input_tokens` →
 * cache.read, `cache_creation_input_tokens` → cache.write, `output_tokens` → output (Anthropic does
 * not report thinking tokens separately, so reasoning is 0). Unknown block types are skipped.
 */

import type * as Sse from "@effect/experimental/Sse"
import { HttpClient } from "@effect/platform"
import { Effect } from "effect"
import * as LLMEvent from "./llm-event.js"
import * as LLMRequest from "./llm-request.js"
import type * as ModelRequestOptions from "./model-request-options.js"
import * as NativeContinuation from "./native-continuation.js"
import * as ProviderFailure from "./provider-failure.js"
import * as ProviderHttp from "./provider-http.js"
import * as ProviderTurns from "./provider-turns.js"

/** The provider-option namespace this adapter reads. */
export const optionsKey = "anthropic"

export const apiVersion = "2023-06-01"

/** `max_tokens` when the request sets no `maxOutputTokens` (plus the thinking budget when thinking). */
export const defaultMaxTokens = 8192

/** The smallest thinking budget the API accepts. */
export const minimumBudget = 1024

/** Tokens of `max_tokens` kept for the answer when a thinking budget must be cut to fit. */
export const answerReserve = 1024

/**
 * Thinking budgets (tokens) for each reasoning effort: our mapping, doubling from `low` up, with
 * `minimal` the API's minimum. `none` means no thinking.
 */
export const effortBudgets: Readonly<Record<Exclude<ModelRequestOptions.ReasoningEffort, "none">, number>> = {
  minimal: minimumBudget,
  low: 4096,
  medium: 8192,
  high: 16_384,
  xhigh: 32_768,
  max: 65_536
}

export interface Config {
  readonly baseURL: string
  readonly apiKey?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

// ---------------------------------------------------------------------------------------------------
// Request

type Block = Record<string, unknown>

export interface Turn {
  readonly role: "user" | "assistant"
  readonly content: ReadonlyArray<Block>
}

const assistantBlocks = (message: LLMRequest.AssistantMessage): Array<Block> =>
  message.content.flatMap((part): Array<Block> => {
    switch (part.type) {
      case "text":
        return part.text === "" ? [] : [{ type: "text", text: part.text }]
      case "reasoning": {
        if (part.replayable === true) {
          const signature = NativeContinuation.anthropicSignature(part.metadata)
          if (signature !== undefined) return [{ type: "thinking", thinking: part.text, signature }]
          const data = NativeContinuation.anthropicRedactedData(part.metadata)
          if (data !== undefined) return [{ type: "redacted_thinking", data }]
        }
        return part.text.trim() === "" ? [] : [{ type: "text", text: part.text }]
      }
      case "tool-call":
        return [{ type: "tool_use", id: part.id, name: part.name, input: part.input }]
    }
  })

/**
 * A file part as an Anthropic block: an image as `image`, a PDF (any other file) as `document`;
 * a `data:` URL becomes a `base64` source, any other URL a `url` source the API fetches.
 */
const fileBlock = (part: LLMRequest.FilePart): Block => {
  const data = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(part.url)
  const source =
    data === null
      ? { type: "url", url: part.url }
      : {
          type: "base64",
          media_type: part.mime,
          // A data URL that is not base64 (percent-encoded) is re-encoded: the API takes base64 only.
          data: data[2] === undefined ? Buffer.from(decodeURIComponent(data[3] ?? "")).toString("base64") : data[3]
        }
  return part.mime.startsWith("image/") ? { type: "image", source } : { type: "document", source }
}

const userBlocks = (part: LLMRequest.UserPart): Array<Block> => {
  if (part.type === "file") return [fileBlock(part)]
  return part.text === "" ? [] : [{ type: "text", text: part.text }]
}

const toolResultContent = (result: LLMRequest.ToolResultPart): unknown =>
  result.files === undefined || result.files.length === 0
    ? result.output
    : [...(result.output === "" ? [] : [{ type: "text", text: result.output }]), ...result.files.map(fileBlock)]

const cacheable = new Set(["text", "tool_result", "tool_use", "image", "document"])

const toolResultBlocks = (
  message: LLMRequest.ToolMessage,
  lastAssistant: LLMRequest.AssistantMessage | undefined
): ReadonlyArray<Block> =>
  LLMRequest.resultsInCallOrder(message, lastAssistant).map(
    (result): Block => ({
      type: "tool_result",
      tool_use_id: result.callID,
      content: toolResultContent(result),
      ...(result.isError ? { is_error: true } : {})
    })
  )

// The wire turns, made once per message and reused (see ProviderTurns.make): an unchanged history
// gives the same turns, whose text RequestJson reuses.
const turnsOf = ProviderTurns.make<Turn["role"], Block, Turn>(
  {
    user: { role: "user", items: (message) => message.content.flatMap(userBlocks) },
    assistant: { role: "assistant", items: assistantBlocks },
    tool: { role: "user", items: toolResultBlocks }
  },
  (role, content) => ({ role, content })
)

/**
 * The wire messages: the lowered history with same-role turns merged, the last block of the last
 * turn marked for the prompt cache (on a copy: the turns are kept, see above).
 */
export const messages = (request: LLMRequest.Request): ReadonlyArray<Turn> => {
  const turns = turnsOf(request.messages)
  const last = turns[turns.length - 1]
  const lastBlock = last?.content[last.content.length - 1]
  if (last !== undefined && lastBlock !== undefined && cacheable.has(String(lastBlock.type))) {
    turns[turns.length - 1] = {
      role: last.role,
      content: [...last.content.slice(0, -1), { ...lastBlock, cache_control: cacheControl(request) }]
    }
  }
  return turns
}

const cacheControl = (request: LLMRequest.Request): Block =>
  request.options?.cacheTtl === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" }

/**
 * The thinking budget the request asks for (see the module comment), before it is fitted to
 * `max_tokens`; undefined for no thinking.
 */
const requestedBudget = (options: ModelRequestOptions.Options): number | undefined => {
  if (options.thinking === false) return undefined
  if (options.thinkingBudget !== undefined) {
    return options.thinkingBudget === 0 ? undefined : Math.max(minimumBudget, options.thinkingBudget)
  }
  if (options.reasoningEffort !== undefined) {
    return options.reasoningEffort === "none" ? undefined : effortBudgets[options.reasoningEffort]
  }
  return options.thinking === true ? effortBudgets.medium : undefined
}

/**
 * Whether the API accepts thinking for this request: not with a forced tool choice (`required` or a
 * named tool), and not when the request continues a tool loop whose assistant turn does not start
 * with a thinking block (the turn was written without thinking, e.g. before a switch to a thinking
 * variant; the API wants such a turn to start with one).
 */
const thinkingAllowed = (request: LLMRequest.Request, turns: ReadonlyArray<Turn>): boolean => {
  const choice = request.toolChoice
  if (choice !== undefined && (typeof choice !== "string" || choice === "required")) return false
  const last = turns[turns.length - 1]
  const previous = turns[turns.length - 2]
  if (last === undefined || previous === undefined || last.role !== "user") return true
  if (!last.content.some((block) => block.type === "tool_result")) return true
  const first = previous.content[0]?.type
  return first === "thinking" || first === "redacted_thinking"
}

/**
 * `max_tokens` and the thinking budget (undefined: no thinking) of a request: the budget fitted under
 * `maxOutputTokens` with {@link answerReserve} left, or `max_tokens` grown to hold it when the request
 * sets no limit. No thinking where the API refuses it (see `thinkingAllowed`).
 */
export const thinking = (
  request: LLMRequest.Request,
  turns: ReadonlyArray<Turn> = messages(request)
): { readonly maxTokens: number; readonly budget?: number } => {
  const limit = request.generation?.maxOutputTokens
  const requested = thinkingAllowed(request, turns) ? requestedBudget(request.options ?? {}) : undefined
  if (requested === undefined) return { maxTokens: limit ?? defaultMaxTokens }
  if (limit === undefined) return { maxTokens: requested + defaultMaxTokens, budget: requested }
  const budget = Math.min(requested, limit - answerReserve)
  return budget < minimumBudget ? { maxTokens: limit } : { maxTokens: limit, budget }
}

const toolChoice = (choice: LLMRequest.ToolChoice | undefined, parallel: boolean | undefined): Block | undefined => {
  const base: Block | undefined =
    choice === undefined
      ? undefined
      : typeof choice !== "string"
        ? { type: "tool", name: choice.name }
        : { type: choice === "required" ? "any" : choice }
  if (parallel !== false || base?.type === "none") return base
  return { ...(base ?? { type: "auto" }), disable_parallel_tool_use: true }
}

const field = (key: string, value: unknown): Block => (value === undefined ? {} : { [key]: value })

const reservedKeys = new Set(["model", "system", "messages", "tools", "tool_choice", "stream"])

/** The JSON body of the Messages request (see the module comment). */
export const body = (request: LLMRequest.Request): Record<string, unknown> => {
  const tools = request.tools ?? []
  const generation = request.generation ?? {}
  const options = request.options ?? {}
  const extra = Object.entries(request.providerOptions?.[optionsKey] ?? {}).filter(([key]) => !reservedKeys.has(key))
  const turns = messages(request)
  const { maxTokens, budget } = thinking(request, turns)
  const thinks = budget !== undefined
  return {
    model: request.model.modelID,
    max_tokens: maxTokens,
    ...(request.system === ""
      ? {}
      : { system: [{ type: "text", text: request.system, cache_control: cacheControl(request) }] }),
    messages: turns,
    ...(tools.length === 0
      ? {}
      : {
          tools: tools.map((tool) => ({
            name: tool.name,
            description: tool.description,
            input_schema: tool.inputSchema
          })),
          ...field("tool_choice", toolChoice(request.toolChoice, options.parallelToolCalls))
        }),
    ...(thinks ? { thinking: { type: "enabled", budget_tokens: budget } } : {}),
    ...(thinks ? {} : field("temperature", generation.temperature)),
    ...(thinks && (generation.topP ?? 0) < 0.95 ? {} : field("top_p", generation.topP)),
    ...(thinks ? {} : field("top_k", generation.topK)),
    ...field("stop_sequences", generation.stopSequences),
    ...field("service_tier", options.serviceTier),
    stream: true,
    ...Object.fromEntries(extra)
  }
}

/** The request headers (names lower-cased; see the module comment for precedence). */
export const headers = (config: Config, request: LLMRequest.Request): Record<string, string> =>
  ProviderHttp.mergeHeaders(
    { "content-type": "application/json", accept: "text/event-stream", "anthropic-version": apiVersion },
    config.apiKey === undefined || config.apiKey === "" ? undefined : { "x-api-key": config.apiKey },
    config.headers,
    request.headers
  )

// ---------------------------------------------------------------------------------------------------
// Stream

const { record, string, number } = ProviderHttp

const finishReason = (raw: string | undefined): LLMEvent.FinishReason => {
  switch (raw) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "tool_use":
      return "tool-calls"
    case "refusal":
      return "content-filter"
    default:
      return "other"
  }
}

type BlockState =
  | { readonly kind: "text"; readonly id: string; text: string }
  | { readonly kind: "reasoning"; readonly id: string; text: string; signature: string; readonly redacted?: string }
  | { readonly kind: "tool"; readonly id: string; readonly name: string; args: string; readonly initial: string }
  | { readonly kind: "skipped" }

interface UsageState {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
}

/** A decoder for one Messages event stream. */
export const decoder = (providerID: string): ProviderHttp.Decoder => {
  const blocks = new Map<number, BlockState>()
  let usage: UsageState | undefined
  let stopReason: string | undefined
  let stopped = false

  const readUsage = (raw: unknown) => {
    const value = record(raw)
    if (value === undefined) return
    const current: UsageState = usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
    current.input = number(value.input_tokens) ?? current.input
    current.output = number(value.output_tokens) ?? current.output
    current.cacheRead = number(value.cache_read_input_tokens) ?? current.cacheRead
    current.cacheWrite = number(value.cache_creation_input_tokens) ?? current.cacheWrite
    usage = current
  }

  const start = (index: number, raw: unknown): Array<LLMEvent.Event> => {
    const block = record(raw)
    switch (string(block?.type)) {
      case "text": {
        const id = `text-${index}`
        const text = string(block?.text) ?? ""
        blocks.set(index, { kind: "text", id, text })
        return text === ""
          ? [{ type: "text-start", id }]
          : [
              { type: "text-start", id },
              { type: "text-delta", id, delta: text }
            ]
      }
      case "thinking": {
        const id = `reasoning-${index}`
        const text = string(block?.thinking) ?? ""
        blocks.set(index, { kind: "reasoning", id, text, signature: string(block?.signature) ?? "" })
        return text === ""
          ? [{ type: "reasoning-start", id }]
          : [
              { type: "reasoning-start", id },
              { type: "reasoning-delta", id, delta: text }
            ]
      }
      case "redacted_thinking": {
        const id = `reasoning-${index}`
        blocks.set(index, { kind: "reasoning", id, text: "", signature: "", redacted: string(block?.data) ?? "" })
        return [{ type: "reasoning-start", id }]
      }
      case "tool_use": {
        const id = string(block?.id) ?? `toolu_${index}`
        const name = string(block?.name) ?? ""
        const input = record(block?.input)
        const initial = input === undefined || Object.keys(input).length === 0 ? "" : JSON.stringify(input)
        blocks.set(index, { kind: "tool", id, name, args: "", initial })
        return [{ type: "tool-input-start", id, name }]
      }
      default:
        blocks.set(index, { kind: "skipped" })
        return []
    }
  }

  const delta = (index: number, raw: unknown): Array<LLMEvent.Event> => {
    const block = blocks.get(index)
    const value = record(raw)
    if (block === undefined || value === undefined) return []
    switch (string(value.type)) {
      case "text_delta": {
        const text = string(value.text) ?? ""
        if (block.kind !== "text" || text === "") return []
        block.text += text
        return [{ type: "text-delta", id: block.id, delta: text }]
      }
      case "thinking_delta": {
        const text = string(value.thinking) ?? ""
        if (block.kind !== "reasoning" || text === "") return []
        block.text += text
        return [{ type: "reasoning-delta", id: block.id, delta: text }]
      }
      case "signature_delta": {
        if (block.kind === "reasoning") block.signature += string(value.signature) ?? ""
        return []
      }
      case "input_json_delta": {
        const json = string(value.partial_json) ?? ""
        if (block.kind !== "tool" || json === "") return []
        block.args += json
        return [{ type: "tool-input-delta", id: block.id, delta: json }]
      }
      default:
        return []
    }
  }

  const stop = (index: number): Array<LLMEvent.Event> => {
    const block = blocks.get(index)
    blocks.delete(index)
    switch (block?.kind) {
      case "text":
        return [{ type: "text-end", id: block.id, text: block.text }]
      case "reasoning": {
        const native =
          block.redacted !== undefined
            ? { redactedData: block.redacted }
            : block.signature === ""
              ? undefined
              : { signature: block.signature }
        return [
          {
            type: "reasoning-end",
            id: block.id,
            text: block.text,
            ...(native === undefined ? {} : { metadata: { [NativeContinuation.anthropic]: native } })
          }
        ]
      }
      case "tool": {
        const text = block.args === "" ? block.initial : block.args
        return [{ type: "tool-input-end", id: block.id, text }, LLMEvent.toolCall(block.id, block.name, text)]
      }
      default:
        return []
    }
  }

  const event = (sse: Sse.Event): ProviderHttp.Step => {
    const parsed = ProviderHttp.parseData(providerID, sse)
    if ("error" in parsed) return { events: [], error: parsed.error }
    const data = record(parsed.json)
    if (data === undefined) return { events: [] }
    const index = number(data.index) ?? 0
    switch (string(data.type) ?? sse.event) {
      case "message_start":
        readUsage(record(data.message)?.usage)
        return { events: [] }
      case "content_block_start":
        return { events: start(index, data.content_block) }
      case "content_block_delta":
        return { events: delta(index, data.delta) }
      case "content_block_stop":
        return { events: stop(index) }
      case "message_delta":
        stopReason = string(record(data.delta)?.stop_reason) ?? stopReason
        readUsage(data.usage)
        return { events: [] }
      case "message_stop":
        stopped = true
        return { events: [], done: true }
      case "error":
        return { events: [], error: ProviderFailure.fromStreamError({ providerID, payload: data, data: sse.data }) }
      default:
        // `ping` and event types added after this adapter was written.
        return { events: [] }
    }
  }

  const end = (): ProviderHttp.Step => {
    if (!stopped) return { events: [], error: ProviderHttp.prematureEnd(providerID) }
    const out: Array<LLMEvent.Event> = []
    if (usage !== undefined) {
      out.push({
        type: "usage",
        tokens: {
          input: usage.input,
          output: usage.output,
          reasoning: 0,
          cache: { read: usage.cacheRead, write: usage.cacheWrite }
        }
      })
    }
    out.push({
      type: "finish",
      reason: finishReason(stopReason),
      ...(stopReason === undefined ? {} : { raw: stopReason })
    })
    return { events: out }
  }

  return { event, end }
}

// ---------------------------------------------------------------------------------------------------
// Client

/** The adapter, sending through the environment's `HttpClient`. */
export const make = (config: Config): Effect.Effect<ProviderHttp.Adapter, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (client) =>
    ProviderHttp.adapter((request) =>
      ProviderHttp.open(
        client,
        {
          providerID: request.model.providerID,
          url: ProviderHttp.join(config.baseURL, "messages"),
          headers: headers(config, request),
          body: body(request),
          listKey: "messages"
        },
        () => decoder(request.model.providerID),
        {
          name: "Anthropic.stream",
          attributes: { providerID: request.model.providerID, modelID: request.model.modelID }
        }
      )
    )
  )
