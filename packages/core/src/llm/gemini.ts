export * as Gemini from "./gemini.js"

/**
 * The Gemini API adapter (Google's `generativelanguage` API, `v1beta`):
 * `POST {baseURL}/models/{model}:streamGenerateContent?alt=sse`, streamed as server-sent events.
 *
 * Request ({@link body}):
 * - `contents`: the lowered history (see `InstructionLowering`) as `user` / `model` turns, consecutive
 *   same-role turns merged into one:
 *   - user text as `text` parts (empty ones dropped); files as `inlineData` (`mimeType`, base64
 *     `data`) for a `data:` URL, `fileData` (`mimeType`, `fileUri`) for any other URL;
 *   - assistant text as `text` parts, tool calls as `functionCall` parts (`name`, `args`);
 *   - tool results as `functionResponse` parts (`name`, `response: {output}`, or `{error}` when the
 *     call failed) of a user turn, in the order of the calls they answer: Gemini pairs them with the
 *     calls by order and name, so no call ids are sent. The files results return follow the results
 *     in that turn: a text naming the calls, then their file parts;
 * - Native Continuation Metadata (`{google: {thoughtSignature}}`) goes back only on parts the runner
 *   marked `replayable`: a reasoning part as a thought part (`thought: true`, its text, its
 *   `thoughtSignature`; a signature-only part as an empty `text` with the signature), a tool call as
 *   its `functionCall` part's `thoughtSignature`. Non-replayable reasoning with visible text becomes
 *   an ordinary `text` part; its metadata is never sent. A model turn whose first call carries no
 *   replayable signature (another model made it, or its step failed) gets Google's documented
 *   validator-skipping value {@link skipSignatureValidation} there instead, because Gemini 3 rejects
 *   a function call of the current turn without a signature;
 * - `systemInstruction`: the request's system text as one text part (omitted when empty);
 * - `tools: [{functionDeclarations}]` with each input schema converted by `GeminiSchema.convert`
 *   (no `parameters` for a tool without arguments), and `toolConfig.functionCallingConfig` for the
 *   tool choice (`auto` → `AUTO`, `none` → `NONE`, `required` → `ANY`, a named tool → `ANY` with
 *   `allowedFunctionNames`), only when there are tools;
 * - `generationConfig`: Generation Controls as `maxOutputTokens`, `temperature`, `topP`, `topK`,
 *   `presencePenalty`, `frequencyPenalty`, `stopSequences` (the API takes at most 5: the first 5),
 *   `seed`; the thinking Model Request Options as `thinkingConfig` ({@link thinkingConfig}); then
 *   the `generationConfig` of the `"google"` provider options merged over them (a `thinkingConfig`
 *   there replaces ours whole). Not sent (no Gemini field): `store`, `promptCacheKey`, `cacheTtl`,
 *   `serviceTier`, `textVerbosity`, `reasoningSummary`, `include`, `parallelToolCalls`;
 * - then the other `"google"` provider options verbatim (e.g. `safetySettings`, `cachedContent`),
 *   except the keys this adapter owns (`contents`, `systemInstruction`, `tools`, `toolConfig`).
 * Headers: `content-type`, `x-goog-api-key` when there is a key, the provider's configured headers,
 * then the request's headers (later wins).
 *
 * Stream ({@link decoder}): every event is a `GenerateContentResponse` chunk; the parts of its first
 * candidate are read in order:
 * - `text` → text; `text` with `thought: true` → reasoning. A part carrying a `thoughtSignature`
 *   ends its block: the signature is Native Continuation Metadata on that reasoning block's
 *   `reasoning-end`, and a signature on a non-thought part (often an empty final text part) becomes
 *   an empty reasoning block of its own after the text, so no two signed parts ever merge;
 * - `functionCall` (always whole) → `tool-input-start`, one `tool-input-delta` with the JSON of its
 *   `args`, `tool-input-end` and `tool-call`, the part's signature as the call's metadata. The call
 *   id is the API's `id` when it sent one, else `call_<responseId>_<n>`;
 * - `finishReason`: `STOP` → stop (tool-calls when the response called tools), `MAX_TOKENS` →
 *   length, the safety family (`SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`,
 *   `IMAGE_*`) → content-filter, anything else → other (tool-calls when there were calls). A prompt
 *   blocked before generation (`promptFeedback.blockReason`, no candidate) → content-filter;
 * - `usageMetadata` (the last one wins): `promptTokenCount` (+ `toolUsePromptTokenCount`) minus
 *   `cachedContentTokenCount` → input, the cached count → cache.read, `candidatesTokenCount` →
 *   output, `thoughtsTokenCount` → reasoning (Gemini counts thoughts apart from candidates, and the
 *   cached tokens inside the prompt count, so these are disjoint as `LLMEvent.Usage` requires);
 * - an `error` object fails the stream with the classified error (`ProviderFailure`).
 * There is no end marker: the body ending after a finish reason (or a block reason) completes the
 * response; ending before one is a retryable TransportError.
 */

import type * as Sse from "@effect/experimental/Sse"
import { HttpClient } from "@effect/platform"
import { Effect } from "effect"
import * as GeminiSchema from "./gemini-schema.js"
import * as LLMEvent from "./llm-event.js"
import * as LLMRequest from "./llm-request.js"
import type * as ModelRequestOptions from "./model-request-options.js"
import * as NativeContinuation from "./native-continuation.js"
import * as ProviderFailure from "./provider-failure.js"
import * as ProviderHttp from "./provider-http.js"
import * as ProviderTurns from "./provider-turns.js"

/** The provider-option namespace this adapter reads. */
export const optionsKey = "google"

/** The public endpoint, used when a provider configures no `baseURL`. */
export const defaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

/**
 * The value Google documents for a `thoughtSignature` that Gemini should not validate: put on a
 * function call the model did not sign (a history from another model), it keeps Gemini 3 from
 * rejecting the request.
 */
export const skipSignatureValidation = "skip_thought_signature_validator"

export interface Config {
  readonly baseURL: string
  readonly apiKey?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

// ---------------------------------------------------------------------------------------------------
// Request

type Part = Record<string, unknown>

interface Content {
  readonly role: "user" | "model"
  readonly parts: ReadonlyArray<Part>
}

/** A file part: `inlineData` for a `data:` URL (re-encoded to base64 when it is not), else `fileData`. */
const filePart = (part: LLMRequest.FilePart): Part => {
  const data = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(part.url)
  if (data === null) return { fileData: { mimeType: part.mime, fileUri: part.url } }
  const base64 = data[2] === undefined ? Buffer.from(decodeURIComponent(data[3] ?? "")).toString("base64") : data[3]
  return { inlineData: { mimeType: part.mime, data: base64 } }
}

const userParts = (part: LLMRequest.UserPart): Array<Part> => {
  if (part.type === "file") return [filePart(part)]
  return part.text === "" ? [] : [{ text: part.text }]
}

const signed = (signature: string | undefined): Part => (signature === undefined ? {} : { thoughtSignature: signature })

/** One assistant message as the parts of a model turn (see the module comment for replay). */
const modelParts = (message: LLMRequest.AssistantMessage): Array<Part> => {
  let firstCall = true
  return message.content.flatMap((part): Array<Part> => {
    switch (part.type) {
      case "text":
        return part.text === "" ? [] : [{ text: part.text }]
      case "reasoning": {
        if (part.replayable === true) {
          const signature = NativeContinuation.googleThoughtSignature(part.metadata)
          if (part.text !== "") return [{ text: part.text, thought: true, ...signed(signature) }]
          return signature === undefined ? [] : [{ text: "", thoughtSignature: signature }]
        }
        return part.text.trim() === "" ? [] : [{ text: part.text }]
      }
      case "tool-call": {
        const own = part.replayable === true ? NativeContinuation.googleThoughtSignature(part.metadata) : undefined
        const signature = own ?? (firstCall ? skipSignatureValidation : undefined)
        firstCall = false
        return [{ functionCall: { name: part.name, args: part.input }, ...signed(signature) }]
      }
    }
  })
}

/** The text that introduces the files tool calls returned, in the user turn that carries them. */
const toolFilesText = (results: ReadonlyArray<LLMRequest.ToolResultPart>): string =>
  `The files returned by the ${results.map((result) => `${result.name} call ${result.callID}`).join(", ")} follow.`

const toolResultParts = (results: ReadonlyArray<LLMRequest.ToolResultPart>): Array<Part> => {
  const withFiles = results.filter((result) => (result.files ?? []).length > 0)
  return [
    ...results.map((result) => ({
      functionResponse: {
        name: result.name,
        response: result.isError ? { error: result.output } : { output: result.output }
      }
    })),
    ...(withFiles.length === 0
      ? []
      : [{ text: toolFilesText(withFiles) }, ...withFiles.flatMap((result) => (result.files ?? []).map(filePart))])
  ]
}

// The wire turns, made once per message and reused (see ProviderTurns.make): an unchanged history
// gives the same turns, whose text RequestJson reuses.
const turnsOf = ProviderTurns.make<Content["role"], Part, Content>(
  {
    user: { role: "user", items: (message) => message.content.flatMap(userParts) },
    assistant: { role: "model", items: modelParts },
    tool: {
      role: "user",
      items: (message, lastAssistant) => toolResultParts(LLMRequest.resultsInCallOrder(message, lastAssistant))
    }
  },
  (role, parts) => ({ role, parts })
)

/** The wire `contents`: the lowered history with same-role turns merged. */
export const contents = (request: LLMRequest.Request): ReadonlyArray<Content> => turnsOf(request.messages)

const functionCallingConfig = (choice: LLMRequest.ToolChoice): Record<string, unknown> => {
  if (typeof choice !== "string") return { mode: "ANY", allowedFunctionNames: [choice.name] }
  return { mode: choice === "required" ? "ANY" : choice === "none" ? "NONE" : "AUTO" }
}

const reservedKeys = new Set(["contents", "systemInstruction", "tools", "toolConfig", "generationConfig"])

/** Thinking budgets (tokens) for a reasoning effort, on models that take a budget (Gemini 2.5). */
export const effortBudgets: Readonly<Record<Exclude<ModelRequestOptions.ReasoningEffort, "none">, number>> = {
  minimal: 512,
  low: 2048,
  medium: 8192,
  high: 16_384,
  xhigh: 24_576,
  max: 32_768
}

/**
 * `generationConfig.thinkingConfig` from the Model Request Options, for `modelID`:
 * - `thinking: false` or `reasoningEffort: "none"` → `thinkingBudget: 0` (thinking off);
 * - a `thinkingBudget` → that budget;
 * - a `reasoningEffort` → on Gemini 3 models (which take a level, not a budget) `thinkingLevel`
 *   `low` for minimal and low, else `high`; on others the budget of {@link effortBudgets};
 * - `thinking: true` alone → `thinkingBudget: -1` (the model sizes its thinking);
 * - `includeThoughts` as given.
 * Undefined when none of these is set.
 */
export const thinkingConfig = (
  modelID: string,
  options: ModelRequestOptions.Options
): Record<string, unknown> | undefined => {
  const include = options.includeThoughts === undefined ? {} : { includeThoughts: options.includeThoughts }
  const effort = options.reasoningEffort
  const amount =
    options.thinking === false || effort === "none"
      ? { thinkingBudget: 0 }
      : options.thinkingBudget !== undefined
        ? { thinkingBudget: options.thinkingBudget }
        : effort !== undefined
          ? /gemini-3/.test(modelID)
            ? { thinkingLevel: effort === "minimal" || effort === "low" ? "low" : "high" }
            : { thinkingBudget: effortBudgets[effort] }
          : options.thinking === true
            ? { thinkingBudget: -1 }
            : {}
  const config = { ...amount, ...include }
  return Object.keys(config).length === 0 ? undefined : config
}

/** The JSON body of the `streamGenerateContent` request (see the module comment). */
export const body = (request: LLMRequest.Request): Record<string, unknown> => {
  const tools = request.tools ?? []
  const generation = request.generation ?? {}
  const options = request.providerOptions?.[optionsKey] ?? {}
  const thinking = thinkingConfig(request.model.modelID, request.options ?? {})
  const generationConfig = {
    ...(generation.maxOutputTokens === undefined ? {} : { maxOutputTokens: generation.maxOutputTokens }),
    ...(generation.temperature === undefined ? {} : { temperature: generation.temperature }),
    ...(generation.topP === undefined ? {} : { topP: generation.topP }),
    ...(generation.topK === undefined ? {} : { topK: generation.topK }),
    ...(generation.presencePenalty === undefined ? {} : { presencePenalty: generation.presencePenalty }),
    ...(generation.frequencyPenalty === undefined ? {} : { frequencyPenalty: generation.frequencyPenalty }),
    ...(generation.stopSequences === undefined ? {} : { stopSequences: generation.stopSequences.slice(0, 5) }),
    ...(generation.seed === undefined ? {} : { seed: generation.seed }),
    ...(thinking === undefined ? {} : { thinkingConfig: thinking }),
    ...ProviderHttp.record(options.generationConfig)
  }
  return {
    contents: contents(request),
    ...(request.system === "" ? {} : { systemInstruction: { parts: [{ text: request.system }] } }),
    ...(tools.length === 0
      ? {}
      : {
          tools: [
            {
              functionDeclarations: tools.map((tool) => {
                const parameters = GeminiSchema.convert(tool.inputSchema)
                return {
                  name: tool.name,
                  description: tool.description,
                  ...(parameters === undefined ? {} : { parameters })
                }
              })
            }
          ],
          ...(request.toolChoice === undefined
            ? {}
            : { toolConfig: { functionCallingConfig: functionCallingConfig(request.toolChoice) } })
        }),
    ...(Object.keys(generationConfig).length === 0 ? {} : { generationConfig }),
    ...Object.fromEntries(Object.entries(options).filter(([key]) => !reservedKeys.has(key)))
  }
}

/** The streaming endpoint of `modelID` (a `models/` prefix on the ID is tolerated). */
export const url = (config: Config, modelID: string): string =>
  ProviderHttp.join(config.baseURL, `models/${modelID.replace(/^models\//, "")}:streamGenerateContent?alt=sse`)

/** The request headers (names lower-cased; see the module comment for precedence). */
export const headers = (config: Config, request: LLMRequest.Request): Record<string, string> =>
  ProviderHttp.mergeHeaders(
    { "content-type": "application/json", accept: "text/event-stream" },
    config.apiKey === undefined || config.apiKey === "" ? undefined : { "x-goog-api-key": config.apiKey },
    config.headers,
    request.headers
  )

// ---------------------------------------------------------------------------------------------------
// Stream

const { record, string, number, array } = ProviderHttp

const contentFilterReasons = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION"
])

/** The finish reason of a response that ended with `raw`, given whether it called tools. */
export const finishReason = (raw: string, sawToolCalls: boolean): LLMEvent.FinishReason => {
  if (raw === "MAX_TOKENS") return "length"
  if (contentFilterReasons.has(raw)) return "content-filter"
  if (sawToolCalls) return "tool-calls"
  return raw === "STOP" ? "stop" : "other"
}

/** Disjoint token counts from a Gemini `usageMetadata` object (see `LLMEvent.Usage`). */
export const tokens = (usage: Readonly<Record<string, unknown>>): LLMEvent.Usage["tokens"] => {
  const prompt = (number(usage.promptTokenCount) ?? 0) + (number(usage.toolUsePromptTokenCount) ?? 0)
  const cached = number(usage.cachedContentTokenCount) ?? 0
  return {
    input: Math.max(0, prompt - cached),
    output: number(usage.candidatesTokenCount) ?? 0,
    reasoning: number(usage.thoughtsTokenCount) ?? 0,
    cache: { read: cached, write: 0 }
  }
}

interface Block {
  readonly id: string
  readonly kind: "text" | "reasoning"
  text: string
  signature?: string
}

const nonEmpty = (value: unknown): string | undefined => {
  const text = string(value)
  return text === undefined || text === "" ? undefined : text
}

/**
 * A decoder for one `streamGenerateContent` event stream. `fallbackID` names the generated call ids
 * when the response carries no `responseId` (default: a random one).
 */
export const decoder = (
  providerID: string,
  fallbackID: string = globalThis.crypto.randomUUID().slice(0, 8)
): ProviderHttp.Decoder => {
  let counter = 0
  let calls = 0
  let block: Block | undefined
  let responseID: string | undefined
  let finish: string | undefined
  /** The prompt's block reason: nothing was generated. */
  let blocked: string | undefined
  let usage: LLMEvent.Usage["tokens"] | undefined
  let sawToolCalls = false

  const closeBlock = (out: Array<LLMEvent.Event>) => {
    if (block === undefined) return
    const { id, kind, text, signature } = block
    block = undefined
    if (kind === "text") {
      out.push({ type: "text-end", id, text })
      return
    }
    out.push({
      type: "reasoning-end",
      id,
      text,
      ...(signature === undefined ? {} : { metadata: { [NativeContinuation.google]: { thoughtSignature: signature } } })
    })
  }

  const open = (out: Array<LLMEvent.Event>, kind: Block["kind"]): Block => {
    if (block !== undefined && block.kind === kind) return block
    closeBlock(out)
    const opened: Block = { id: `${kind}-${counter++}`, kind, text: "" }
    out.push(kind === "text" ? { type: "text-start", id: opened.id } : { type: "reasoning-start", id: opened.id })
    block = opened
    return opened
  }

  const append = (out: Array<LLMEvent.Event>, kind: Block["kind"], delta: string) => {
    const target = open(out, kind)
    target.text += delta
    out.push(
      kind === "text" ? { type: "text-delta", id: target.id, delta } : { type: "reasoning-delta", id: target.id, delta }
    )
  }

  /** Ends the open reasoning block with `signature`, or a new empty one when none is open. */
  const sign = (out: Array<LLMEvent.Event>, signature: string, joinOpen: boolean) => {
    if (!joinOpen || block?.kind !== "reasoning") closeBlock(out)
    open(out, "reasoning").signature = signature
    closeBlock(out)
  }

  const call = (out: Array<LLMEvent.Event>, raw: Readonly<Record<string, unknown>>, signature: string | undefined) => {
    closeBlock(out)
    sawToolCalls = true
    const id = nonEmpty(raw.id) ?? `call_${responseID ?? fallbackID}_${calls}`
    calls++
    const name = string(raw.name) ?? ""
    const args = record(raw.args)
    const text = args === undefined ? "" : JSON.stringify(args)
    out.push({ type: "tool-input-start", id, name })
    if (text !== "") out.push({ type: "tool-input-delta", id, delta: text })
    out.push({ type: "tool-input-end", id, text })
    const complete = LLMEvent.toolCall(id, name, text)
    out.push(
      signature === undefined
        ? complete
        : { ...complete, metadata: { [NativeContinuation.google]: { thoughtSignature: signature } } }
    )
  }

  const part = (out: Array<LLMEvent.Event>, raw: unknown) => {
    const value = record(raw)
    if (value === undefined) return
    const signature = nonEmpty(value.thoughtSignature)
    const functionCall = record(value.functionCall)
    if (functionCall !== undefined) return call(out, functionCall, signature)
    const text = string(value.text)
    const thought = value.thought === true
    if (text !== undefined && text !== "") append(out, thought ? "reasoning" : "text", text)
    // A signed thought part closes its reasoning run; a signed non-thought part gets a block of its own.
    if (signature !== undefined) sign(out, signature, thought)
    // Other part kinds (executable code, inline media) carry nothing this runtime reads.
  }

  const event = (sse: Sse.Event): ProviderHttp.Step => {
    const parsed = ProviderHttp.parseData(providerID, sse)
    if ("error" in parsed) return { events: [], error: parsed.error }
    const chunk = record(parsed.json)
    if (chunk === undefined) return { events: [] }
    if (chunk.error !== undefined && chunk.error !== null) {
      return { events: [], error: ProviderFailure.fromStreamError({ providerID, payload: chunk, data: sse.data }) }
    }
    responseID ??= nonEmpty(chunk.responseId)
    const out: Array<LLMEvent.Event> = []
    const candidate = record(array(chunk.candidates)[0])
    for (const raw of array(record(candidate?.content)?.parts)) part(out, raw)
    finish = nonEmpty(candidate?.finishReason) ?? finish
    blocked = nonEmpty(record(chunk.promptFeedback)?.blockReason) ?? blocked
    const rawUsage = record(chunk.usageMetadata)
    if (rawUsage !== undefined) usage = tokens(rawUsage)
    return { events: out }
  }

  const end = (): ProviderHttp.Step => {
    const raw = finish ?? blocked
    if (raw === undefined) return { events: [], error: ProviderHttp.prematureEnd(providerID) }
    const out: Array<LLMEvent.Event> = []
    closeBlock(out)
    if (usage !== undefined) out.push({ type: "usage", tokens: usage })
    const reason = finish === undefined ? "content-filter" : finishReason(finish, sawToolCalls)
    out.push({ type: "finish", reason, raw })
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
          url: url(config, request.model.modelID),
          headers: headers(config, request),
          body: body(request),
          listKey: "contents"
        },
        () => decoder(request.model.providerID),
        {
          name: "Gemini.stream",
          attributes: { providerID: request.model.providerID, modelID: request.model.modelID }
        }
      )
    )
  )
