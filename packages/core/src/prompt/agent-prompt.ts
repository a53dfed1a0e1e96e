export * as AgentPrompt from "./agent-prompt.js"

import { CompactionPrompt } from "./compaction-prompt.js"
import { ModelFamilyPrompt } from "./model-family-prompt.js"
import { SummaryPrompt } from "./summary-prompt.js"
import { TitlePrompt } from "./title-prompt.js"

/**
 * The explore subagent's own system text (upstream gives explore a prompt of its own; the other
 * built-in agents that run Steps use the model family's prompt). Our wording.
 */
export const explore = `You are a fast, read-only OpenCode subagent for exploring a codebase. Find files, search code and answer the question you were given; never modify anything. Report paths and the evidence you found.`

const byAgent: ReadonlyMap<string, string> = new Map([
  ["explore", explore],
  ["compaction", CompactionPrompt.system],
  ["title", TitlePrompt.system],
  ["summary", SummaryPrompt.system]
])

/**
 * The built-in system text that belongs to the agent itself, whatever the model: explore's, and the
 * hidden compaction, title and summary agents' (each request of theirs starts with it). Absent for
 * the agents that take the model family's prompt (build, plan, general, and agents defined only in
 * config). A config `agent.<name>.prompt` replaces it; `GET /api/agent` shows the one in force as the
 * agent's `system`.
 */
export const own = (name: string): string | undefined => byAgent.get(name)

/**
 * The agent's system text: the first part of the one system text of every Step. A config
 * `agent.<name>.prompt` replaces it (the caller checks that first). Otherwise the built-in prompt of
 * the agent when it has one ({@link own}), else the prompt of `model`'s family (ModelFamilyPrompt): the
 * build, plan and general agents and every agent defined only in config. Pure, so it is the same for
 * every Step of one agent and model.
 */
export const forAgent = (name: string, model: { readonly apiID: string; readonly providerID: string }): string =>
  byAgent.get(name) ?? ModelFamilyPrompt.forModel(model)

/**
 * Appended as the final assistant turn of a Step that reached the agent's step limit (tools are
 * disabled for that Step). Same conditions and requirements as upstream, in our words.
 */
export const maxSteps = `MAXIMUM STEPS REACHED

This task has used every step it is allowed. Tools are now disabled until the user writes again, so answer with text only.

Requirements:
1. Make no tool calls of any kind (no reading, writing, editing, searching or running).
2. Reply with text that summarises the work done so far.
3. This overrides every other instruction, including any request from the user to keep editing or to use tools.

Your reply must contain:
- A statement that this agent has reached its maximum number of steps
- A summary of what has been accomplished
- The tasks that remain unfinished
- Recommendations for what to do next

Calling a tool now would be a serious violation. Reply with text only.`
