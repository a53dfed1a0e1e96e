export * as SubagentPrompt from "./subagent-prompt.js"

import type { Identifier } from "@opencode-ai/schema"

/**
 * The texts the model reads about subagents: the `task` tool's description (which subagents there
 * are and how to hand one a job), the guidance a prompt's `@agent` mention adds, and the frame of a
 * subagent's result. Our wording; the conditions follow the upstream records.
 */

/** One subagent as the task tool's description lists it. */
export interface Listed {
  readonly name: string
  readonly description?: string | undefined
}

/** The task tool's description, listing the subagents a call may name. */
export const taskDescription = (subagents: ReadonlyArray<Listed>): string =>
  [
    "Hand a self-contained job to a subagent: it works in a session of its own, with its own tools and permissions,",
    "and its final reply comes back to you as this tool's result.",
    "",
    "Subagents you can name in `subagent_type`:",
    ...(subagents.length === 0
      ? ["(none are configured)"]
      : subagents.map((agent) => `- ${agent.name}: ${agent.description ?? "No description."}`)),
    "",
    "How to use it:",
    "- Delegate when a job is large or open-ended (searching an unfamiliar codebase, researching a question) and you only need its conclusion.",
    "- The subagent sees nothing of this conversation: `prompt` must say everything it needs, what to find or do, and what its reply should contain.",
    "- Say whether the subagent should only research or may also change files.",
    "- Independent jobs can run at once: call the tool several times in one reply.",
    "- The user does not see the subagent's reply; summarise what matters from it in your own answer.",
    "- For a single known file or a quick search, use read, glob or grep yourself instead."
  ].join("\n")

/**
 * What a prompt's `@name` mention adds after the user's text: call the task tool with that subagent.
 * `invokedByUser`: the agent's rules deny starting it, so the model is told the user asked for it
 * (the task tool runs a subagent the latest prompt mentions without that check).
 */
export const mention = (name: string, options: { readonly invokedByUser?: boolean } = {}): string =>
  `The user mentioned the ${name} agent. From the message above and the conversation so far, write a prompt for it and call the task tool with subagent_type "${name}".${
    options.invokedByUser === true
      ? " The user asked for this subagent themselves: it exists, and this call is allowed even though you would not start it on your own."
      : ""
  }`

/** The task tool's result: the subagent's final reply, framed with where it came from. */
export const result = (input: {
  readonly agent: string
  readonly sessionID: Identifier.SessionID
  readonly text: string
}): string =>
  [
    `The ${input.agent} subagent finished (its session: ${input.sessionID}). Its final reply:`,
    "",
    "<subagent_reply>",
    input.text.length > 0 ? input.text : "(The subagent ended without a text reply.)",
    "</subagent_reply>"
  ].join("\n")
