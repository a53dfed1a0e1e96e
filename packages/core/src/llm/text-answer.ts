export * as TextAnswer from "./text-answer.js"

import type { Session } from "@opencode-ai/schema"
import { Effect, Stream } from "effect"
import type * as LLMClient from "./llm-client.js"
import type * as LLMError from "./llm-error.js"
import type * as LLMRequest from "./llm-request.js"
import * as Retry from "./retry.js"

/** A side request's answer: its text blocks joined by newlines, and the usage it reported. */
export interface Answer {
  readonly text: string
  readonly tokens?: Session.Tokens
}

/** Why a side request failed, with the usage reported before it did (the provider billed it). */
export interface Failure {
  readonly error: LLMError.Any
  readonly tokens?: Session.Tokens | undefined
}

/**
 * One side request that only wants text (a title, a generated agent): the request is streamed,
 * retried by the retry policy while nothing was streamed, and its text blocks are collected. Nothing
 * is recorded; the caller decides what the answer and its usage become. Interruption aborts the
 * request.
 */
export const ask = (
  llm: LLMClient.Interface,
  request: LLMRequest.Request,
  options: { readonly retry?: Retry.Policy | undefined } = {}
): Effect.Effect<Answer, Failure> =>
  Effect.suspend(() => {
    const texts: Array<string> = []
    let tokens: Session.Tokens | undefined
    return Retry.stream(() => llm.stream(request), options.retry !== undefined ? { policy: options.retry } : {}).pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          if (event.type === "text-end") texts.push(event.text)
          if (event.type === "usage") tokens = event.tokens
        })
      ),
      Effect.mapError((error): Failure => ({ error, tokens })),
      Effect.map((): Answer => ({ text: texts.join("\n"), ...(tokens === undefined ? {} : { tokens }) }))
    )
  })
