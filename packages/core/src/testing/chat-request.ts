export * as ChatRequest from "./chat-request.js"

/**
 * Readers of an OpenAI-compatible chat-completions request as the ScriptedLLMServer recorded it
 * (`RecordedRequest.body`), for tests that check what the model was sent.
 */

interface Message {
  readonly role: string
  readonly content?: unknown
  readonly tool_call_id?: string
}

/** Anything with a recorded JSON body. */
export interface Recorded {
  readonly body: any
}

const messagesOf = (request: Recorded): ReadonlyArray<Message> => request.body.messages as ReadonlyArray<Message>

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part: { readonly text?: string }) => part.text ?? "").join("")
      : ""

/** The one system message's text ("" without one). */
export const system = (request: Recorded): string =>
  textOf(messagesOf(request).find((message) => message.role === "system")?.content)

/** Every message but the system one, as JSON: for looking for a text whatever the part layout. */
export const conversation = (request: Recorded): string =>
  JSON.stringify(messagesOf(request).filter((message) => message.role !== "system"))

/** The text of every user turn, one per line. */
export const userText = (request: Recorded): string =>
  messagesOf(request)
    .filter((message) => message.role === "user")
    .map((message) => textOf(message.content))
    .join("\n")

/** The text of each user turn, in order. */
export const userTurns = (request: Recorded): ReadonlyArray<string> =>
  messagesOf(request)
    .filter((message) => message.role === "user")
    .map((message) => textOf(message.content))

/** The names of the tools offered. */
export const toolNames = (request: Recorded): ReadonlyArray<string> =>
  ((request.body.tools ?? []) as ReadonlyArray<{ readonly function: { readonly name: string } }>).map(
    (tool) => tool.function.name
  )

/** The result the request carries for the call `callID` ("" when it carries none). */
export const toolResult = (request: Recorded, callID: string): string =>
  textOf(messagesOf(request).find((message) => message.role === "tool" && message.tool_call_id === callID)?.content)
