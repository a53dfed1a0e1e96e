export * as AgentGeneration from "./agent-generation.js"

/**
 * The agent-generation request (seed 003 "Agent configuration generator"): the model writes an agent
 * configuration (identifier, when to use it, system prompt) from a user's description. One side
 * request, with no tools and no session: the requested model, else the configured default model, the
 * system text of {@link AgentGenerationPrompt.system} and a user turn with the description and the
 * names already taken. The answer must be one JSON object (a code fence around it is tolerated)
 * that decodes as `GeneratedAgent` and whose identifier is not an existing agent's name.
 *
 * Nothing is stored: the result is a proposal for the caller to keep or drop. The request's usage is
 * not charged to any session. Interruption aborts the request.
 */

import { Agent, Errors, type Model } from "@opencode-ai/schema"
import { Context, Effect, Either, Layer, Option, Schema } from "effect"
import { Config } from "../config/config.js"
import { LLMClient } from "../llm/llm-client.js"
import { LLMRequest } from "../llm/llm-request.js"
import type { Retry } from "../llm/retry.js"
import { TextAnswer } from "../llm/text-answer.js"
import { Traced } from "../observability/traced.js"
import { AgentGenerationPrompt } from "../prompt/agent-generation-prompt.js"

export interface Input {
  /** What the agent should do, in the user's words. */
  readonly description: string
  /** The model to ask; default: the configured default model. */
  readonly model?: Model.ModelRef | undefined
}

export interface Interface {
  /**
   * The agent configuration the model proposes for `description`. A model the catalog does not
   * offer, or no model at all, is an InvalidRequestError (field `model`). A provider that fails, or
   * an answer that is not a usable configuration, is a ServiceUnavailableError (`service:
   * "agent-generation"`, the reason in `message`): asking again may succeed.
   */
  readonly generate: (
    input: Input
  ) => Effect.Effect<Agent.GeneratedAgent, Errors.InvalidRequestError | Errors.ServiceUnavailableError>
}

/** `yield* AgentGeneration.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/AgentGeneration")<Service, Interface>() {}

export interface Options {
  /** The provider retry policy; default `Retry.defaultPolicy`. */
  readonly retry?: Retry.Policy | undefined
}

const decodeAgent = Schema.decodeUnknownEither(Schema.parseJson(Agent.GeneratedAgent))

/**
 * The configuration in a model's answer: the text from its first `{` to its last `}` (so a code fence
 * or a sentence around the object does not matter), decoded; the reason when it is not one.
 */
export const parse = (text: string, taken: ReadonlyArray<string>): Either.Either<Agent.GeneratedAgent, string> => {
  const start = text.indexOf("{")
  const end = text.lastIndexOf("}")
  if (start < 0 || end < start) return Either.left("the answer holds no JSON object")
  return Either.flatMap(
    Either.mapLeft(
      decodeAgent(text.slice(start, end + 1)),
      () => "the answer is not a JSON object with a lowercase-hyphenated identifier, whenToUse and systemPrompt"
    ),
    (agent) =>
      taken.includes(agent.identifier)
        ? Either.left(`the identifier "${agent.identifier}" is already an agent's name`)
        : Either.right(agent)
  )
}

const unavailable = (message: string) =>
  new Errors.ServiceUnavailableError({ service: "agent-generation", message: `No agent was generated: ${message}` })

export const layer = (options: Options = {}): Layer.Layer<Service, never, Config.Service | LLMClient.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const llm = yield* LLMClient.Service

      const generate = Traced.fn("AgentGeneration.generate")(function* (input: Input) {
        const ref = input.model ?? Option.getOrUndefined(config.model)
        const found = ref === undefined ? Option.none() : config.findModel(ref)
        if (Option.isNone(found)) {
          return yield* new Errors.InvalidRequestError({
            kind: "body",
            field: "model",
            message:
              ref === undefined
                ? "No model is configured: name one in `model`"
                : `The model ${ref.providerID}/${ref.id} is not in the catalog`
          })
        }
        const { provider, model } = found.value
        const taken = config.agents.map((agent) => agent.name)
        const request: LLMRequest.Request = {
          model: { providerID: provider.id, modelID: model.apiID },
          system: AgentGenerationPrompt.system,
          messages: [LLMRequest.user(AgentGenerationPrompt.request(input.description, taken))],
          generation: model.limit.output > 0 ? { maxOutputTokens: model.limit.output } : {}
        }
        const answer = yield* TextAnswer.ask(
          llm,
          request,
          options.retry !== undefined ? { retry: options.retry } : {}
        ).pipe(Effect.mapError((failure) => unavailable(`the model could not be reached (${failure.error.message})`)))
        return yield* Either.match(parse(answer.text, taken), {
          onLeft: (reason) => Effect.fail(unavailable(reason)),
          onRight: Effect.succeed
        })
      })

      return Service.of({ generate })
    })
  )
