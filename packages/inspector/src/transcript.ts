/**
 * One session's Transcript and Step timeline, built from its durable events (replayed from the
 * start, then live) and the live-only deltas of the global stream:
 * - text streams in from `text.delta` and is replaced by the final text of `text.ended` (a delta
 *   arriving after that is ignored);
 * - reasoning sits folded in a details/summary;
 * - a tool call shows its input, its state, its (already bounded) output, and a link to the Managed
 *   Tool Output File holding the complete output when there is one;
 * - prompts, instruction updates (`context.updated`), compactions, retries and shell commands are
 *   marked in order;
 * - each Step is a timeline entry with its duration from `step.started` to `step.ended`/`failed`.
 * Applying the same durable event twice (a resumed stream) changes nothing.
 */
import type { SessionDurableEvent, SessionStepError, V2Event } from "@opencode-ai/client"
import { byId, type Child, h } from "./dom.js"
import * as Format from "./format.js"

/** What one tool output block shows at most; the rest is in the managed file when there is one. */
const maxShown = 20_000

/** The managed file naming pattern (`ManagedOutput.newName`); other paths a tool returns are shown unlinked. */
const managedName = /^tool_[0-9a-f]{12}[0-9A-Za-z]{14}$/

const stepError = (error: SessionStepError): string =>
  "type" in error ? error.message : `${error.name}: ${error.data.message}`

const baseName = (path: string): string => path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1)

interface Step {
  readonly item: HTMLLIElement
  readonly started: number
  readonly state: HTMLElement
}

interface Tool {
  readonly item: HTMLLIElement
  readonly state: HTMLElement
  readonly body: HTMLElement
}

export class Transcript {
  private readonly list = byId<HTMLOListElement>("transcript")
  private readonly timeline = byId<HTMLOListElement>("timeline")
  private readonly texts = new Map<string, HTMLElement>()
  private readonly ended = new Set<string>()
  private readonly tools = new Map<string, Tool>()
  private readonly steps = new Map<string, Step>()
  /** The highest durable sequence number applied: where a reconnect resumes. */
  seq = 0

  constructor() {
    Transcript.clear()
  }

  /** Empties the transcript and the timeline (no session shown). */
  static clear(): void {
    byId("transcript").replaceChildren()
    byId("timeline").replaceChildren()
  }

  /** Applies one durable event of the session stream, in order. */
  durable(event: SessionDurableEvent): void {
    const seq = event.durable?.seq
    if (seq !== undefined) {
      if (seq <= this.seq) return
      this.seq = seq
    }
    switch (event.type) {
      case "session.next.prompted": {
        const files = event.data.prompt.files?.length ?? 0
        this.add(
          "prompt",
          h("h4", {}, "Prompt", h("span", { class: "when" }, Format.time(event.data.timestamp))),
          h("p", { class: "text" }, event.data.prompt.text),
          files > 0 ? h("p", { class: "muted" }, `${files} file${files === 1 ? "" : "s"} attached`) : null
        )
        return
      }
      case "session.next.synthetic":
        this.add("marker", h("p", {}, h("strong", {}, "Note: "), event.data.text))
        return
      case "session.next.context.updated":
        this.add(
          "marker instructions",
          h(
            "details",
            {},
            h("summary", {}, "Instructions updated", h("span", { class: "when" }, Format.time(event.data.timestamp))),
            h("pre", {}, Format.clip(event.data.text, maxShown))
          )
        )
        return
      case "session.next.step.started":
        this.stepStarted(
          event.data.assistantMessageID,
          event.data.timestamp,
          `${event.data.model.providerID}/${event.data.model.id}`
        )
        return
      case "session.next.step.ended":
        this.stepSettled(
          event.data.assistantMessageID,
          event.data.timestamp,
          `${event.data.finish} · ${Format.cost(event.data.cost)} · ${Format.tokens(event.data.tokens)}`,
          false
        )
        return
      case "session.next.step.failed":
        this.stepSettled(
          event.data.assistantMessageID,
          event.data.timestamp,
          `failed: ${stepError(event.data.error)}`,
          true
        )
        this.add("marker error", h("p", {}, h("strong", {}, "Step failed: "), stepError(event.data.error)))
        return
      case "session.next.text.started":
        this.text(event.data.textID)
        return
      case "session.next.text.ended":
        this.ended.add(event.data.textID)
        this.text(event.data.textID).textContent = event.data.text
        return
      case "session.next.reasoning.started":
        this.reasoning(event.data.reasoningID)
        return
      case "session.next.reasoning.ended":
        this.ended.add(event.data.reasoningID)
        this.reasoning(event.data.reasoningID).textContent = event.data.text
        return
      case "session.next.tool.input.started":
        this.tool(event.data.callID, event.data.name)
        return
      case "session.next.tool.called": {
        const tool = this.tool(event.data.callID, event.data.tool)
        tool.state.textContent = "running"
        tool.body.replaceChildren(
          h(
            "details",
            {},
            h("summary", {}, "Input"),
            h("pre", {}, Format.clip(JSON.stringify(event.data.input, null, 2), maxShown))
          )
        )
        return
      }
      case "session.next.tool.success": {
        const tool = this.tool(event.data.callID, "tool")
        tool.state.textContent = "done"
        tool.item.dataset.state = "done"
        const output = event.data.content
          .map((part) => (part.type === "text" ? part.text : `[file ${part.name ?? part.mime}]`))
          .join("\n")
        const paths = event.data.outputPaths ?? []
        tool.body.append(h("pre", { class: "output", "aria-label": "Output" }, Format.clip(output, maxShown)))
        if (paths.length > 0) {
          tool.body.append(
            h(
              "ul",
              { class: "output-files", "aria-label": "Output files" },
              ...paths.map((path) =>
                h(
                  "li",
                  {},
                  managedName.test(baseName(path))
                    ? h(
                        "a",
                        {
                          href: `/inspector/tool-output/${encodeURIComponent(baseName(path))}`,
                          target: "_blank",
                          rel: "noopener"
                        },
                        "Complete output"
                      )
                    : "Output file",
                  " ",
                  h("code", {}, path)
                )
              )
            )
          )
        }
        return
      }
      case "session.next.tool.failed": {
        const tool = this.tool(event.data.callID, "tool")
        tool.state.textContent = "failed"
        tool.item.dataset.state = "failed"
        tool.body.append(h("p", { class: "error" }, event.data.error.message))
        return
      }
      case "session.next.compaction.started":
        this.add("marker compaction", h("p", {}, h("strong", {}, `Compaction started (${event.data.reason})`)))
        return
      case "session.next.compaction.ended":
        this.add(
          "marker compaction",
          h(
            "details",
            {},
            h("summary", {}, `Compacted (${event.data.reason}): the history above is replaced by this summary`),
            h("pre", {}, Format.clip(event.data.text, maxShown))
          )
        )
        return
      case "session.next.retried":
        this.add("marker", h("p", {}, `Retry ${event.data.attempt}: ${JSON.stringify(event.data.error)}`))
        return
      case "session.next.shell.started":
        this.add("marker", h("p", {}, "Shell: ", h("code", {}, event.data.command)))
        return
      case "session.next.agent.switched":
        this.add("marker", h("p", {}, `Agent: ${event.data.agent}`))
        return
      case "session.next.model.switched":
        this.add("marker", h("p", {}, `Model: ${event.data.model.providerID}/${event.data.model.id}`))
        return
      default:
        return
    }
  }

  /** Applies a live-only event of the global stream (text and reasoning deltas). */
  live(event: V2Event): void {
    if (event.type === "session.next.text.delta") {
      if (!this.ended.has(event.data.textID)) this.text(event.data.textID).append(event.data.delta)
    } else if (event.type === "session.next.reasoning.delta") {
      if (!this.ended.has(event.data.reasoningID)) this.reasoning(event.data.reasoningID).append(event.data.delta)
    }
  }

  private add(kind: string, ...children: ReadonlyArray<Child>): HTMLLIElement {
    const item = h("li", { class: `entry ${kind}` }, ...children)
    this.list.append(item)
    return item
  }

  private text(id: string): HTMLElement {
    const known = this.texts.get(id)
    if (known !== undefined) return known
    const body = h("p", { class: "text" })
    this.add("assistant", h("h4", {}, "Assistant"), body)
    this.texts.set(id, body)
    return body
  }

  private reasoning(id: string): HTMLElement {
    const key = `reasoning:${id}`
    const known = this.texts.get(key)
    if (known !== undefined) return known
    const body = h("pre", { class: "reasoning" })
    this.add("reasoning", h("details", {}, h("summary", {}, "Reasoning"), body))
    this.texts.set(key, body)
    return body
  }

  private tool(callID: string, name: string): Tool {
    const known = this.tools.get(callID)
    if (known !== undefined) return known
    const state = h("span", { class: "state" }, "preparing")
    const body = h("div", { class: "tool-body" })
    const item = this.add("tool", h("h4", {}, "Tool ", h("code", {}, name), " ", state), body)
    const tool = { item, state, body }
    this.tools.set(callID, tool)
    return tool
  }

  private stepStarted(id: string, at: number, model: string): void {
    if (this.steps.has(id)) return
    const state = h("span", { class: "state" }, "running")
    const item = h(
      "li",
      { class: "step", "data-state": "running" },
      h("span", { class: "step-name" }, `Step ${this.steps.size + 1}`),
      " ",
      h("span", { class: "muted" }, model),
      h("br"),
      h("span", { class: "when" }, Format.time(at)),
      " ",
      state
    )
    this.timeline.append(item)
    this.steps.set(id, { item, started: at, state })
  }

  private stepSettled(id: string, at: number, summary: string, failed: boolean): void {
    const step = this.steps.get(id)
    if (step === undefined) return
    step.item.dataset.state = failed ? "failed" : "ended"
    step.state.replaceChildren(h("span", { class: "duration" }, Format.duration(at - step.started)), ` · ${summary}`)
  }
}
