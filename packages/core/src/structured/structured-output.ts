export * as StructuredOutput from "./structured-output.js"

/**
 * Structured Output: a prompt whose Output Format is `json_schema` is answered by a JSON object that
 * validates against the prompt's schema, not by text. While the latest user message of the Model
 * Context asks for one ({@link requested}):
 *
 * - the request offers the `StructuredOutput` tool (input schema = the user's schema, description =
 *   {@link description}), adds {@link instruction} after the other system parts, and requires a tool
 *   call (`toolChoice: "required"`; at the agent's step limit, this very tool);
 * - a call whose input validates succeeds: its input is the call's `structured` result, which the
 *   message projection also records as the assistant message's `structured`, and the Step ends the
 *   run (no further Step);
 * - a call whose input does not validate fails with the validation errors, so the model can correct
 *   itself in the next Step; once `retryCount` retries are used up (see OutputFormat), or when the model
 *   finishes a Step without calling any tool, or reaches its step limit without a valid call, the Step
 *   fails with a `StructuredOutputError`.
 *
 * ```
 * Step ─► valid call ───────────────────────────► Captured: step.ended, the run stops
 *      ├► invalid call, retries left ─► next Step (the errors are the call's result)
 *      ├► invalid call, none left ────────────────► Missing: step.failed(StructuredOutputError)
 *      ├► other tools only ───────────► next Step (Missing at the step limit)
 *      └► no tool call ───────────────────────────► Missing
 * ```
 *
 * The failures counted are durable: those of the Steps since the prompt come from history (its failed
 * `StructuredOutput` calls), so a restart resumes the count where it stood.
 */

import { OutputFormat, type SessionError, type SessionMessages } from "@opencode-ai/schema"
import { Data, Effect, Either, Ref } from "effect"
import { Traced } from "../observability/traced.js"
import { ToolRegistry } from "../tool/tool-registry.js"
import { JsonSchemaValidator } from "./json-schema-validator.js"

/** The tool's name. It is reserved: while a Structured Output is requested it shadows any other tool of that name. */
export const toolName = "StructuredOutput"

/** What the model is told about the tool (our words for the rules of the upstream behaviour). */
export const description = `Gives your final answer in the structured form the user asked for.

Rules:
- Call this tool once, as the very last thing you do; nothing else happens after it.
- Finish all research and every other tool call first.
- Its input is your answer: a JSON object that is valid against the tool's input schema.
- If the call is rejected, read the validation errors and call it again with a corrected object.`

/** The system instruction added after the other system parts while a Structured Output is requested. */
export const instruction = `The user asked for a structured answer. Give your final response only by calling the \
${toolName} tool with an object that matches its schema. A plain text reply does not count as an answer: \
always finish with the ${toolName} call.`

/**
 * A Structured Output the latest user message asks for: its format, and how many of the model's
 * `StructuredOutput` calls since that message failed (already durable in history).
 */
export interface Requested {
  readonly format: OutputFormat.OutputFormatJsonSchema
  readonly failures: number
}

/**
 * The Structured Output that `history` (a Model Context, chronological) is waiting for: the latest
 * user message's, when its format is `json_schema`; undefined otherwise. Pure.
 */
export const requested = (history: ReadonlyArray<SessionMessages.SessionMessage>): Requested | undefined => {
  let failures = 0
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index]
    if (message === undefined) continue
    if (message.type === "user") {
      const format = OutputFormat.jsonSchema(message.format)
      return format === undefined ? undefined : { format, failures }
    }
    if (message.type !== "assistant") continue
    for (const part of message.content)
      if (part.type === "tool" && part.name === toolName && part.state.status === "error") failures++
  }
  return undefined
}

/** The tool definition offered to the model for `format`. */
export const definition = (format: OutputFormat.OutputFormatJsonSchema) => ({
  name: toolName,
  description,
  inputSchema: format.schema
})

/** The retries a format allows (its `retryCount`, else the default). */
export const retryCount = (format: OutputFormat.OutputFormatJsonSchema): number =>
  format.retryCount ?? OutputFormat.defaultRetryCount

/**
 * How a Step that was asked for a Structured Output settles, once the provider finished and every
 * call settled:
 * - `Captured`: a call's input validated; the Step ends normally and the run stops;
 * - `Pending`: no valid call yet, retries left and the step limit not reached: the run continues;
 * (both count the failed calls since the prompt, in `failures`)
 * - `Missing`: no Structured Output and no way left to get one: the Step fails with `error`.
 */
export type Verdict = Data.TaggedEnum<{
  Captured: { readonly failures: number }
  Pending: { readonly failures: number }
  Missing: { readonly error: SessionError.StructuredOutputError }
}>

export const Verdict = Data.taggedEnum<Verdict>()

/**
 * One Step's Structured Output: the tools with `StructuredOutput` added ({@link Attempt.offer}) and
 * the Step's {@link Verdict}. Its state lives for the Step only.
 */
export interface Attempt {
  /** `tools` with the `StructuredOutput` tool added, shadowing any tool of that name. */
  readonly offer: (tools: ToolRegistry.Materialized) => ToolRegistry.Materialized
  /** The Step's verdict, after its calls settled; `toolCalls` is how many calls it made. */
  readonly verdict: (toolCalls: number) => Effect.Effect<Verdict>
}

/** One Step's state: whether a call's input validated, and the failed calls since the prompt. */
interface State {
  readonly captured: boolean
  readonly failures: number
}

const missing = (message: string, retries: number): Verdict =>
  Verdict.Missing({ error: { name: "StructuredOutputError", data: { message, retries } } })

/**
 * The Attempt of one Step for `request`. `final`: the Step is the agent's last (its step limit is
 * reached), so not capturing the output in it fails it. Fails with the reason when the format's
 * schema does not compile (admission refuses such schemas, so this means a stored one broke).
 */
export const attempt = Traced.fn("StructuredOutput.attempt")(function* (
  request: Requested,
  options: { readonly final: boolean }
) {
  const compiled = yield* JsonSchemaValidator.compile(request.format.schema)
  if (Either.isLeft(compiled)) return yield* Effect.fail(`The output format's schema cannot be used: ${compiled.left}`)
  const validator = compiled.right
  const retries = retryCount(request.format)
  const state = yield* Ref.make<State>({ captured: false, failures: request.failures })

  /** Validates one call's input: the first valid one is the Step's Structured Output. */
  const execute = (input: Readonly<Record<string, unknown>>) =>
    Effect.flatMap(
      Ref.modify(state, (current): readonly [Either.Either<ToolRegistry.Result, string>, State] => {
        if (current.captured) {
          return [Either.left("A structured output was already recorded in this step; it is final."), current]
        }
        const errors = validator.validate(input)
        if (errors.length === 0) {
          const result = {
            content: [{ type: "text" as const, text: "Structured output recorded." }],
            structured: input
          }
          return [Either.right(result), { ...current, captured: true }]
        }
        const left = retries - current.failures
        const message = [
          "The output does not match the schema:",
          ...errors.map((error) => `- ${error}`),
          left > 0 ? `Call ${toolName} again with a corrected object.` : "No retries are left."
        ].join("\n")
        return [Either.left(message), { ...current, failures: current.failures + 1 }]
      }),
      (outcome): Effect.Effect<ToolRegistry.Result, ToolRegistry.ToolFailure> =>
        Either.isRight(outcome)
          ? Effect.succeed(outcome.right)
          : Effect.fail(new ToolRegistry.ToolFailure({ message: outcome.left }))
    )

  const offer = (tools: ToolRegistry.Materialized): ToolRegistry.Materialized => ({
    definitions: [...tools.definitions.filter((tool) => tool.name !== toolName), definition(request.format)],
    settle: (call, context) =>
      call.name !== toolName
        ? tools.settle(call, context)
        : call.inputError !== undefined
          ? Effect.zipRight(
              Ref.update(state, (current) => ({ ...current, failures: current.failures + 1 })),
              Effect.fail(new ToolRegistry.ToolFailure({ message: `Invalid tool input: ${call.inputError}` }))
            )
          : execute(call.input)
  })

  const verdict = (toolCalls: number) =>
    Effect.map(Ref.get(state), (current): Verdict => {
      if (current.captured) return Verdict.Captured({ failures: current.failures })
      if (current.failures > retries) {
        return missing(
          `The structured output still did not match the schema after ${retries} ${retries === 1 ? "retry" : "retries"}`,
          retries
        )
      }
      const made = Math.min(current.failures, retries)
      if (toolCalls === 0) return missing(`The model answered without calling the ${toolName} tool`, made)
      if (options.final) {
        return missing(`The model reached its step limit without a valid ${toolName} call`, made)
      }
      return Verdict.Pending({ failures: current.failures })
    })

  return { offer, verdict } satisfies Attempt
})
