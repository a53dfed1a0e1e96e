export * as CompactionPrompt from "./compaction-prompt.js"

/**
 * The texts of compaction, in our words. Structure and conditions follow the seed records (seed
 * 003, "Compaction summary and update instructions", "Compaction prompt assembly", "Compaction
 * builder source", and the compaction agent's system text):
 * - the compaction agent's own system text ({@link system});
 * - the request's one user message ({@link build}): the serialized conversation inside
 *   `<conversation>` tags, then either the instruction to write a new summary (no prior summary), or
 *   the prior summary inside `<prior-summary>` tags with the rules for merging it
 *   ({@link updateRules}); then the summary template with its rules ({@link template}) in both cases;
 * - what the model of later Steps reads in place of the compacted history ({@link summaryMessage}),
 *   and the runtime-written continuation after an automatic compaction ({@link continuation}).
 */

/** The system text of the hidden `compaction` agent (a config `agent.compaction.prompt` replaces it). */
export const system = `You summarize conversations between a user and a coding agent. You receive such a conversation and write a structured summary in the exact format you are asked for, so that another coding agent can pick up the work where it stopped.

Follow the requested output structure exactly: keep every section, keep exact file paths and identifiers when they are known, and write short bullets rather than paragraphs.

Do not carry on the conversation and do not answer any question asked in it. Write only the structured summary, in the format the user message asks for, and in the language the conversation is written in.`

/** The summary's structure and its rules; the last part of every compaction request. */
export const template = `Write exactly the Markdown structure inside <template>, with its sections in the same order. Leave the <template> tags themselves out of your answer.
<template>
## Objective
- [what the user wants to achieve, in one or two short sentences]

## Important Details
- [constraints and preferences, decisions with their reasons, facts and assumptions that matter, anything exact that is needed to go on; or "(none)"]

## Work State
### Completed
- [work that is finished, facts that were checked, changes that were made; or "(none)"]

### Active
- [what is in progress: partial changes, ongoing investigation; or "(none)"]

### Blocked
- [what is in the way: blockers, failing commands, open unknowns; or "(none)"]

## Next Move
1. [the next concrete action, or "(none)"]
2. [the action after it, if known, or "(none)"]

## Relevant Files
- [file or directory path: why it matters; or "(none)"]
</template>

Rules:
- Keep every section, also when it is empty.
- Write short bullets, never paragraphs of prose.
- Keep file paths, symbols, commands, error messages, URLs and identifiers exactly as they appeared.
- Do not mention that this is a summary or that the conversation was compacted.`

/** How to merge a prior summary with the newer conversation (only when there is a prior summary). */
export const updateRules = `The <prior-summary> covers everything that happened before the <conversation>. Write one new summary that covers both. The <prior-summary> is thrown away afterwards, so whatever you leave out of the new summary is gone.

How to combine them:
- Keep the objectives, constraints, user instructions, decisions and parallel lines of work from the <prior-summary>, even when the <conversation> does not mention them again. Leave out only what is done and no longer needed.
- The <conversation> is newer than the <prior-summary>. When the two disagree, the conversation is right: state the corrected fact and drop the old one.
- Add the progress, decisions, constraints and context that the conversation adds.
- Move work that has been finished from "Active" to "Completed".
- When a blocker has been resolved, say so, and keep whatever detail is still needed to go on.
- Bring "Objective" and "Next Move" up to date with where the work stands now.`

/**
 * The one user message of a compaction request: the conversation, then (with a prior summary) the
 * prior summary and the merge rules, or (without one) the instruction to write a new summary; the
 * template and its rules last in both cases.
 */
export const build = (input: { readonly conversation: string; readonly previousSummary?: string | undefined }) => {
  const conversation = `This is the conversation so far:\n\n<conversation>\n${input.conversation}\n</conversation>`
  if (input.previousSummary === undefined) {
    return [
      conversation,
      "Write a new summary of the conversation inside the <conversation> tags above, so that another coding agent can continue the work from it.",
      template
    ].join("\n\n")
  }
  return [
    conversation,
    `This is the summary of what happened before the <conversation> above:\n\n<prior-summary>\n${input.previousSummary}\n</prior-summary>`,
    updateRules,
    template
  ].join("\n\n")
}

/**
 * What later Steps read in place of the history a compaction replaced: its summary and, when some
 * of the newest history was kept word for word, that part after it. Sent as a user turn.
 */
export const summaryMessage = (summary: string, recent: string) =>
  recent.length === 0
    ? `What happened in this session so far, summarized:\n\n${summary}`
    : `What happened in this session so far, summarized:\n\n${summary}\n\nThe most recent part of the conversation, word for word:\n\n${recent}`

/** Written after an automatic compaction in the middle of work, so the drain carries on by itself. */
export const continuation =
  "Carry on with the current task from where it stopped. The summary above holds what you need; do not start over, and ask the user only if something essential is missing."

/** Replaces an old tool output in the model's view when pruning removed it (the durable record keeps it). */
export const prunedOutput = "[This older tool output was cleared to save context. Run the tool again if you need it.]"
