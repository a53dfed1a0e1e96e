export * as OpenAICompatible from "./openai-compatible.js"

/**
 * The OpenAI-compatible chat completions adapter: `POST {baseURL}/chat/completions`, streamed.
 *
 * Request ({@link body}):
 * - `model`, then `messages`: exactly one `system` message first (the request's system text,
 *   unchanged; omitted only when empty), then the history in order;
 * - user turns: a plain string for one text part, else an array of parts: `text`, images as
 *   `image_url` (`{url}`: the `data:` URL or the provider-fetched URL), other files (PDFs) as `file`
 *   (`{filename, file_data}`); Instruction Updates are lowered into them (see `InstructionLowering`);
 * - assistant turns: their text (and lowered reasoning) as `content` (`null` when there is none) and
 *   their calls as `tool_calls` with JSON-encoded `arguments`;
 * - reasoning: chat completions has no way to send reasoning back, so replayable reasoning is omitted
 *   (the model produced it and needs nothing more); non-replayable, non-empty reasoning (another model
 *   wrote it) becomes ordinary assistant text, as the seed requires after a model switch;
 * - tool results: one `role: "tool"` message each (`tool_call_id`, `content`), in the order of the
 *   calls they answer. The protocol has no error flag: the runner's output text says what failed.
 *   A tool message carries text only, so the files results return (an image `read` opened) follow
 *   the results in one user turn: a text naming the calls, then their file parts;
 * - `tools` (`type: "function"`), `tool_choice` and `parallel_tool_calls` only when there are tools
 *   (OpenAI rejects `parallel_tool_calls` without them);
 * - `stream: true`, `stream_options: {include_usage: true}`;
 * - Generation Controls: `maxOutputTokens` as `max_tokens` (widest support among compatible servers),
 *   or as `max_completion_tokens` in the `openai` {@link Dialect} (the official API, whose reasoning
 *   models reject `max_tokens` and where it counts reasoning tokens too); `temperature`, `top_p`,
 *   `presence_penalty`, `frequency_penalty`, `stop` (the list), `seed`; `top_k` only in the
 *   `compatible` dialect (vLLM, llama.cpp, OpenRouter and others read it; OpenAI rejects it);
 * - Model Request Options: `reasoningEffort` → `reasoning_effort`, `textVerbosity` → `verbosity`,
 *   `store`, `promptCacheKey` → `prompt_cache_key`, `serviceTier` → `service_tier`,
 *   `parallelToolCalls` → `parallel_tool_calls`. Chat completions has no field for the others, so
 *   they are not sent: `reasoningSummary` and `include` (Responses API only), `thinking`,
 *   `thinkingBudget`, `includeThoughts` (a reasoning model here is steered by `reasoning_effort`)
 *   and `cacheTtl` (OpenAI caches prompts automatically);
 * - then the `"openai-compatible"` compatibility body fields, verbatim (they win over the above).
 * Headers: `content-type`, `authorization: Bearer <apiKey>` when there is a key, the provider's
 * configured headers, then the request's headers (later wins).
 *
 * Stream ({@link decoder}): `choices[0].delta.content` → text; `reasoning_content` (or `reasoning`) →
 * reasoning; `tool_calls[i]` are assembled by `index` and ended, in index order, when the
 * `finish_reason` arrives; the usage chunk (`stream_options.include_usage`) → `usage`; `[DONE]` ends.
 * `usage.input` excludes cache reads: `prompt_tokens - cached_tokens` (`prompt_tokens_details.
 * cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens`), and `usage.output` excludes reasoning:
 * `completion_tokens - reasoning_tokens`. An `error` object in a chunk fails the stream with the
 * classified error. A body that ends with neither a `finish_reason` nor `[DONE]` is a retryable
 * TransportError.
 */

import type * as Sse from "@effect/experimental/Sse"
import { HttpClient } from "@effect/platform"
import { Effect } from "effect"
import * as InstructionLowering from "./instruction-lowering.js"
import * as LLMEvent from "./llm-event.js"
import * as LLMRequest from "./llm-request.js"
import * as LoweringMemo from "./lowering-memo.js"
import * as PrefixMemo from "./prefix-memo.js"
import * as ProviderFailure from "./provider-failure.js"
import * as ProviderHttp from "./provider-http.js"

/** The provider-option namespace this adapter reads. */
export const optionsKey = "openai-compatible"

/**
 * Which server speaks the protocol: `openai` is OpenAI's own API (`@ai-sdk/openai`), `compatible`
 * any other server (`@ai-sdk/openai-compatible`: vLLM, llama.cpp, Ollama, OpenRouter, …). They differ
 * in the output-limit field and in `top_k` (see the module comment).
 */
export type Dialect = "openai" | "compatible"

export interface Config {
  readonly baseURL: string
  readonly apiKey?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Default `compatible`. */
  readonly dialect?: Dialect | undefined
}

// ---------------------------------------------------------------------------------------------------
// Request

const assistantMessage = (message: LLMRequest.AssistantMessage): Record<string, unknown> => {
  const texts: Array<string> = []
  const calls: Array<Record<string, unknown>> = []
  for (const part of message.content) {
    switch (part.type) {
      case "text":
        if (part.text !== "") texts.push(part.text)
        break
      case "reasoning":
        if (part.replayable !== true && part.text.trim() !== "") texts.push(part.text)
        break
      case "tool-call":
        calls.push({
          id: part.id,
          type: "function",
          function: { name: part.name, arguments: JSON.stringify(part.input) }
        })
        break
    }
  }
  return {
    role: "assistant",
    content: texts.length === 0 ? null : texts.join("\n\n"),
    ...(calls.length === 0 ? {} : { tool_calls: calls })
  }
}

/**
 * A file part on this wire: an image as an `image_url` part (a `data:` URL or the provider-fetched
 * URL), any other file (a PDF) as a `file` part with its `data:` URL in `file_data` and its name.
 */
const filePart = (part: LLMRequest.FilePart): Record<string, unknown> =>
  part.mime.startsWith("image/")
    ? { type: "image_url", image_url: { url: part.url } }
    : { type: "file", file: { filename: part.name ?? "attachment", file_data: part.url } }

const userPart = (part: LLMRequest.UserPart): Record<string, unknown> =>
  part.type === "text" ? { type: "text", text: part.text } : filePart(part)

const userMessage = (message: LLMRequest.UserMessage): Record<string, unknown> => {
  const only = message.content.length === 1 ? message.content[0] : undefined
  return {
    role: "user",
    content: only !== undefined && only.type === "text" ? only.text : message.content.map(userPart)
  }
}

/** The text that introduces the files tool calls returned, in the user turn that carries them. */
const toolFilesText = (results: ReadonlyArray<LLMRequest.ToolResultPart>): string => {
  const calls = results.map((result) => result.callID).join(", ")
  return `The files returned by tool call${results.length === 1 ? "" : "s"} ${calls} follow.`
}

const toolChoice = (choice: LLMRequest.ToolChoice): unknown =>
  typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } }

/** A tool message's wire messages: one `tool` message per result, then a user turn with the files they returned. */
const toolMessages = (
  message: LLMRequest.ToolMessage,
  lastAssistant: LLMRequest.AssistantMessage | undefined
): ReadonlyArray<Record<string, unknown>> => {
  const results = LLMRequest.resultsInCallOrder(message, lastAssistant)
  const out: Array<Record<string, unknown>> = results.map((result) => ({
    role: "tool",
    tool_call_id: result.callID,
    content: result.output
  }))
  // A tool message carries text only: the files the calls returned follow in one user turn.
  const withFiles = results.filter((result) => (result.files ?? []).length > 0)
  if (withFiles.length > 0) {
    out.push({
      role: "user",
      content: [
        { type: "text", text: toolFilesText(withFiles) },
        ...withFiles.flatMap((result) => (result.files ?? []).map(filePart))
      ]
    })
  }
  return out
}

// Each request message's wire messages, reused while it is the same object (see LoweringMemo); a
// tool message's depend on the assistant message whose calls they answer too.
const userWire = LoweringMemo.make<LLMRequest.UserMessage, Record<string, unknown>>()
const assistantWire = LoweringMemo.make<LLMRequest.AssistantMessage, Record<string, unknown>>()
const toolWire = LoweringMemo.make<LLMRequest.ToolMessage, ReadonlyArray<Record<string, unknown>>>()

/** One history message's wire messages, after `lastAssistant` (the state: the calls a tool message answers). */
const wireStep = (
  lastAssistant: LLMRequest.AssistantMessage | undefined,
  message: InstructionLowering.Lowered,
  out: Array<Record<string, unknown>>
): LLMRequest.AssistantMessage | undefined => {
  switch (message.role) {
    case "user":
      out.push(userWire.get(message, null) ?? userWire.set(message, null, userMessage(message)))
      return lastAssistant
    case "assistant": {
      const wire = assistantWire.get(message, null) ?? assistantWire.set(message, null, assistantMessage(message))
      // A message with nothing the protocol can carry (e.g. only replayable reasoning) is dropped.
      if (wire.content !== null || wire.tool_calls !== undefined) out.push(wire)
      return message
    }
    case "tool": {
      const wires =
        toolWire.get(message, lastAssistant) ??
        toolWire.set(message, lastAssistant, toolMessages(message, lastAssistant))
      for (const wire of wires) out.push(wire)
      return lastAssistant
    }
  }
}

const historyWire = PrefixMemo.make<
  InstructionLowering.Lowered,
  Record<string, unknown>,
  LLMRequest.AssistantMessage | undefined
>()

/**
 * The wire messages: one system message first, then the lowered history (reused as far as it
 * continues a history lowered before: see PrefixMemo).
 */
export const messages = (request: LLMRequest.Request): ReadonlyArray<Record<string, unknown>> => {
  const history = historyWire.lower(InstructionLowering.lower(request.messages), [], undefined, wireStep)
  return request.system === "" ? history : [{ role: "system", content: request.system }, ...history]
}

const reservedKeys = new Set(["model", "messages", "tools", "tool_choice", "stream", "stream_options"])

/** `{[key]: value}`, or nothing when the value is undefined. */
const field = (key: string, value: unknown): Record<string, unknown> => (value === undefined ? {} : { [key]: value })

/** The JSON body of the chat completions request (see the module comment). */
export const body = (request: LLMRequest.Request, dialect: Dialect = "compatible"): Record<string, unknown> => {
  const tools = request.tools ?? []
  const generation = request.generation ?? {}
  const options = request.options ?? {}
  const extra = Object.entries(request.providerOptions?.[optionsKey] ?? {}).filter(([key]) => !reservedKeys.has(key))
  return {
    model: request.model.modelID,
    messages: messages(request),
    ...(tools.length === 0
      ? {}
      : {
          tools: tools.map((tool) => ({
            type: "function",
            function: { name: tool.name, description: tool.description, parameters: tool.inputSchema }
          })),
          ...(request.toolChoice === undefined ? {} : { tool_choice: toolChoice(request.toolChoice) }),
          ...field("parallel_tool_calls", options.parallelToolCalls)
        }),
    stream: true,
    stream_options: { include_usage: true },
    ...field(dialect === "openai" ? "max_completion_tokens" : "max_tokens", generation.maxOutputTokens),
    ...field("temperature", generation.temperature),
    ...field("top_p", generation.topP),
    ...(dialect === "compatible" ? field("top_k", generation.topK) : {}),
    ...field("presence_penalty", generation.presencePenalty),
    ...field("frequency_penalty", generation.frequencyPenalty),
    ...field("stop", generation.stopSequences),
    ...field("seed", generation.seed),
    ...field("reasoning_effort", options.reasoningEffort),
    ...field("verbosity", options.textVerbosity),
    ...field("store", options.store),
    ...field("prompt_cache_key", options.promptCacheKey),
    ...field("service_tier", options.serviceTier),
    ...Object.fromEntries(extra)
  }
}

/** The request headers (names lower-cased; see the module comment for precedence). */
export const headers = (config: Config, request: LLMRequest.Request): Record<string, string> =>
  ProviderHttp.mergeHeaders(
    { "content-type": "application/json", accept: "text/event-stream" },
    config.apiKey === undefined || config.apiKey === "" ? undefined : { authorization: `Bearer ${config.apiKey}` },
    config.headers,
    request.headers
  )

// ---------------------------------------------------------------------------------------------------
// Stream

const { record, string, number, array } = ProviderHttp

const finishReason = (raw: string | undefined, sawToolCalls: boolean): LLMEvent.FinishReason => {
  switch (raw) {
    case "stop":
    case "eos":
    case "end_turn":
    case undefined:
      return sawToolCalls ? "tool-calls" : raw === undefined ? "other" : "stop"
    case "length":
    case "max_tokens":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    default:
      return sawToolCalls ? "tool-calls" : "other"
  }
}

/** Disjoint token counts from an OpenAI-style usage object (see `LLMEvent.Usage`). */
export const tokens = (usage: Readonly<Record<string, unknown>>): LLMEvent.Usage["tokens"] => {
  const prompt = number(usage.prompt_tokens) ?? 0
  const completion = number(usage.completion_tokens) ?? 0
  const cached =
    number(record(usage.prompt_tokens_details)?.cached_tokens) ?? number(usage.prompt_cache_hit_tokens) ?? 0
  const reasoning = number(record(usage.completion_tokens_details)?.reasoning_tokens) ?? 0
  return {
    input: Math.max(0, prompt - cached),
    output: Math.max(0, completion - reasoning),
    reasoning,
    cache: { read: cached, write: 0 }
  }
}

interface Block {
  readonly id: string
  readonly kind: "text" | "reasoning"
  text: string
}

interface ToolState {
  readonly index: number
  id: string
  name: string
  args: string
  started: boolean
}

/** A decoder for one chat completions event stream. */
export const decoder = (providerID: string): ProviderHttp.Decoder => {
  let counter = 0
  let block: Block | undefined
  const tools = new Map<number, ToolState>()
  let toolsFlushed = false
  let finish: { readonly raw: string | undefined } | undefined
  let usage: LLMEvent.Usage["tokens"] | undefined
  let sawDone = false

  const closeBlock = (out: Array<LLMEvent.Event>) => {
    if (block === undefined) return
    out.push(
      block.kind === "text"
        ? { type: "text-end", id: block.id, text: block.text }
        : { type: "reasoning-end", id: block.id, text: block.text }
    )
    block = undefined
  }

  const appendBlock = (out: Array<LLMEvent.Event>, kind: Block["kind"], delta: string) => {
    if (block !== undefined && block.kind !== kind) closeBlock(out)
    if (block === undefined) {
      block = { id: `${kind}-${counter++}`, kind, text: "" }
      out.push(kind === "text" ? { type: "text-start", id: block.id } : { type: "reasoning-start", id: block.id })
    }
    block.text += delta
    out.push(
      kind === "text" ? { type: "text-delta", id: block.id, delta } : { type: "reasoning-delta", id: block.id, delta }
    )
  }

  const startTool = (out: Array<LLMEvent.Event>, tool: ToolState) => {
    tool.started = true
    out.push({ type: "tool-input-start", id: tool.id, name: tool.name })
    if (tool.args !== "") out.push({ type: "tool-input-delta", id: tool.id, delta: tool.args })
  }

  const toolDelta = (out: Array<LLMEvent.Event>, raw: unknown, position: number) => {
    const call = record(raw)
    if (call === undefined) return
    const index = number(call.index) ?? position
    const fn = record(call.function)
    const name = string(fn?.name)
    // Arguments are a JSON string; a few servers (older Ollama) send the decoded object instead.
    const rawArgs = fn?.arguments
    const args = string(rawArgs) ?? (record(rawArgs) === undefined ? "" : JSON.stringify(rawArgs))
    let tool = tools.get(index)
    if (tool === undefined) {
      closeBlock(out)
      tool = { index, id: string(call.id) || `call_${counter++}`, name: name ?? "", args: "", started: false }
      tools.set(index, tool)
    } else if (!tool.started && name !== undefined) {
      // A few servers stream the name in pieces before any arguments.
      tool.name += name
    }
    if (!tool.started && tool.name !== "") startTool(out, tool)
    if (args === "") return
    tool.args += args
    if (tool.started) out.push({ type: "tool-input-delta", id: tool.id, delta: args })
  }

  const flushTools = (out: Array<LLMEvent.Event>) => {
    if (toolsFlushed) return
    toolsFlushed = true
    closeBlock(out)
    for (const tool of [...tools.values()].sort((a, b) => a.index - b.index)) {
      if (!tool.started) startTool(out, tool)
      out.push({ type: "tool-input-end", id: tool.id, text: tool.args })
      out.push(LLMEvent.toolCall(tool.id, tool.name, tool.args))
    }
  }

  const event = (sse: Sse.Event): ProviderHttp.Step => {
    if (sse.data.trim() === "[DONE]") {
      sawDone = true
      return { events: [], done: true }
    }
    const parsed = ProviderHttp.parseData(providerID, sse)
    if ("error" in parsed) return { events: [], error: parsed.error }
    const chunk = record(parsed.json)
    if (chunk === undefined) return { events: [] }
    if (chunk.error !== undefined && chunk.error !== null) {
      return { events: [], error: ProviderFailure.fromStreamError({ providerID, payload: chunk, data: sse.data }) }
    }
    const out: Array<LLMEvent.Event> = []
    const choice = record(array(chunk.choices)[0])
    const delta = record(choice?.delta)
    if (delta !== undefined) {
      const reasoning = string(delta.reasoning_content) ?? string(delta.reasoning)
      if (reasoning !== undefined && reasoning !== "") appendBlock(out, "reasoning", reasoning)
      const content = string(delta.content)
      if (content !== undefined && content !== "") appendBlock(out, "text", content)
      array(delta.tool_calls).forEach((call, position) => toolDelta(out, call, position))
    }
    const reason = string(choice?.finish_reason)
    if (reason !== undefined && finish === undefined) {
      finish = { raw: reason }
      flushTools(out)
    }
    const rawUsage = record(chunk.usage) ?? record(record(chunk.x_groq)?.usage)
    if (rawUsage !== undefined) usage = tokens(rawUsage)
    return { events: out }
  }

  const end = (): ProviderHttp.Step => {
    if (finish === undefined && !sawDone) {
      return { events: [], error: ProviderHttp.prematureEnd(providerID) }
    }
    const out: Array<LLMEvent.Event> = []
    flushTools(out)
    if (usage !== undefined) out.push({ type: "usage", tokens: usage })
    out.push({
      type: "finish",
      reason: finishReason(finish?.raw, tools.size > 0),
      ...(finish?.raw === undefined ? {} : { raw: finish.raw })
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
          url: ProviderHttp.join(config.baseURL, "chat/completions"),
          headers: headers(config, request),
          body: body(request, config.dialect),
          listKey: "messages"
        },
        () => decoder(request.model.providerID),
        {
          name: "OpenAICompatible.stream",
          attributes: { providerID: request.model.providerID, modelID: request.model.modelID }
        }
      )
    )
  )
