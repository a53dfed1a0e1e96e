export * as ContractExtension from "./contract-extension.js"

/*
 * Contract Extensions: where our schemas deliberately go beyond the observed upstream V2 contract
 * inside components the contract already has. Each entry names the component (its OpenAPI name), what
 * is added, and why. Every addition is optional or a further union alternative, so a value the
 * contract describes is still valid here, and a client that knows only the contract can ignore the
 * addition (it describes each one in its OpenAPI `description`).
 *
 * The conformance tests (`schema/test/reference-shapes.test.ts`, `protocol/test/conformance.test.ts`)
 * read these tables: they check that each addition is exactly as declared, remove it, and then
 * require the rest of the shape to equal the contract's.
 */

/** Optional properties added to a contract component: component → property → why. */
export const fields: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  PromptInput: {
    format:
      "a prompt may ask for a Structured Output (`OutputFormat`, the contract's own component, as on its V1 " +
      "user messages); the V2 prompt body has no format"
  },
  Prompt: { format: "the admitted prompt records the format it was submitted with, so a restart keeps it" },
  SessionMessageUser: { format: "the user message shows the format it asked for, as the V1 user message does" },
  SessionMessageAssistant: {
    structured: "the validated Structured Output, as the V1 assistant message's `structured`"
  },
  ProviderV2Info: {
    disabledReason:
      "why a listed provider is disabled (an unknown or unspeakable `npm` package, a sign-in-only service, " +
      "no base URL); the contract has only the `disabled` flag"
  }
}

/**
 * Our components that stand where the contract has another one and widen it with further union
 * alternatives: ours → the contract's component it widens and the components added, with why.
 */
export const widened: Readonly<
  Record<string, { readonly of: string; readonly added: ReadonlyArray<string>; readonly reason: string }>
> = {
  SessionStepError: {
    of: "SessionErrorUnknown",
    added: ["StructuredOutputError"],
    reason:
      "a Step asked for a Structured Output that it did not produce fails with the contract's own " +
      "StructuredOutputError (a V1 error), carried by step.failed and the assistant message's error"
  }
}
