export * as QuestionTool from "./question-tool.js"

import { Effect, Layer, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import { QuestionRequests } from "../../question/question-requests.js"
import { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"

/** One choice (upstream's `QuestionOption`). */
export const Option = Schema.Struct({
  label: Schema.String.annotations({ description: "Display text (1-5 words, concise)" }),
  description: Schema.String.annotations({ description: "Explanation of the choice" })
})

/** One question (upstream's `QuestionInfo` without `custom`, which the runtime decides). */
export const Question = Schema.Struct({
  question: Schema.String.annotations({ description: "The complete question" }),
  header: Schema.String.annotations({ description: "A very short label (max 30 characters)" }),
  options: Schema.Array(Option).annotations({ description: "The available choices" }),
  multiple: Schema.optional(Schema.Boolean).annotations({ description: "Allow selecting several choices" })
})

export const Input = Schema.Struct({
  questions: Schema.Array(Question).annotations({ description: "The questions to ask" })
})
export type Input = typeof Input.Type

const description = `Asks the user questions during execution, and waits for the answers. Use it to gather preferences or requirements, clarify ambiguous instructions, or let the user choose between implementation approaches.

- Each question has a short header and a list of options; the user may also type a custom answer.
- Set multiple: true to let the user pick more than one option.
- If you recommend an option, list it first and add "(Recommended)" to its label.`

/** What the model reads: each question with its answer (an unanswered one says so). */
export const render = (
  questions: ReadonlyArray<{ readonly question: string }>,
  answers: QuestionRequests.Answers
): string =>
  `User has answered your questions: ${questions
    .map((question, index) => {
      const answer = answers[index] ?? []
      return `"${question.question}"="${answer.length === 0 ? "Unanswered" : answer.join(", ")}"`
    })
    .join(", ")}. You can now continue with the user's answers in mind.`

/**
 * The `question` tool: creates a durable question request (`question.v2.asked`) and suspends this
 * call only until the user replies (the answers are returned as text, and as `structured.answers`)
 * or rejects it (a ToolFailure the model reads). Interrupting the session rejects the request.
 */
export const make = (questions: Pick<QuestionRequests.Interface, "ask">): ToolRegistry.Tool =>
  BuiltinTool.define({
    name: "question",
    description,
    input: Input,
    execute: Traced.fn("QuestionTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      if (input.questions.length === 0) return yield* BuiltinTool.fail("The question tool needs at least one question")
      const answers = yield* questions
        .ask({
          sessionID: context.sessionID,
          questions: input.questions.map((question) => ({ ...question, custom: true })),
          ...(context.messageID !== undefined ? { tool: { messageID: context.messageID, callID: context.callID } } : {})
        })
        .pipe(
          Effect.catchTags({
            QuestionRejectedError: (error) => Effect.fail(BuiltinTool.fail(error.message)),
            SessionNotFoundError: (error) => Effect.fail(BuiltinTool.fail(error.message))
          })
        )
      return BuiltinTool.text(render(input.questions, answers), { answers: answers.map((answer) => [...answer]) })
    })
  })

/** Registers the question tool in the ToolRegistry for the lifetime of the layer. */
export const layer: Layer.Layer<never, never, ToolRegistry.Service | QuestionRequests.Service> = Layer.scopedDiscard(
  Effect.gen(function* () {
    const registry = yield* ToolRegistry.Service
    yield* registry.register(make(yield* QuestionRequests.Service))
  })
)
