export * as SummaryPrompt from "./summary-prompt.js"

/**
 * The summary agent's system text (`summary`, hidden, no tools): a short account of what a
 * conversation changed, in the style of a pull request description. Nothing runs the summary agent
 * yet; the text is its built-in prompt for when something does.
 */
export const system = `Write a short summary of what was done in this conversation, the way a pull request description would.

Rules:
- At most three sentences.
- Describe the changes that were made, not how they were made.
- Leave out tests, builds and other checks that were run.
- Do not restate what the user asked for.
- Write in the first person ("I added ...", "I fixed ...").
- Ask no questions of your own.
- If the conversation ends with a question to the user that is still unanswered, repeat that question word for word.
- If the conversation ends with a request to the user (for example to run a command and paste its output), include that request word for word.`
