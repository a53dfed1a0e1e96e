/**
 * Pending Requests of the selected session: permission asks (allow once, always, reject) and
 * questions (options as radio buttons or checkboxes, an own answer when allowed, send or dismiss).
 * A card goes away when its reply succeeds or when the stream says the request was answered
 * elsewhere; a failed reply is announced and the buttons come back.
 */
import type { OpencodeClient, PermissionV2Reply, PermissionV2Request, QuestionV2Request } from "@opencode-ai/client"
import { byId, type Child, h } from "./dom.js"

const replies: ReadonlyArray<{ readonly reply: PermissionV2Reply; readonly label: string }> = [
  { reply: "once", label: "Allow once" },
  { reply: "always", label: "Always allow" },
  { reply: "reject", label: "Reject" }
]

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

export class Requests {
  private readonly cards = new Map<string, HTMLElement>()
  private readonly section = byId("requests-section")
  private readonly list = byId("requests")

  constructor(
    private readonly client: OpencodeClient,
    private readonly sessionID: string
  ) {}

  clear(): void {
    this.cards.clear()
    this.list.replaceChildren()
    this.section.hidden = true
  }

  /** Replaces the cards with what the server lists as pending now. */
  async load(): Promise<void> {
    const [permissions, questions] = await Promise.all([
      this.client.permissions.list({ sessionID: this.sessionID }),
      this.client.questions.list({ sessionID: this.sessionID })
    ])
    this.clear()
    for (const request of permissions) this.permission(request)
    for (const request of questions) this.question(request)
  }

  permission(request: PermissionV2Request): void {
    if (this.cards.has(request.id)) return
    const titleID = `request-${request.id}`
    const status = h("p", { role: "alert", class: "error" })
    const buttons = replies.map(({ reply, label }) =>
      h(
        "button",
        {
          type: "button",
          class: reply === "reject" ? "danger" : reply === "once" ? "primary" : undefined,
          onclick: () => void send(reply)
        },
        label
      )
    )
    const send = async (reply: PermissionV2Reply) => {
      for (const button of buttons) button.disabled = true
      status.textContent = ""
      try {
        await this.client.permissions.reply({ sessionID: this.sessionID, requestID: request.id, reply })
        this.resolved(request.id)
      } catch (error) {
        status.textContent = `The reply failed: ${describe(error)}`
        for (const button of buttons) button.disabled = false
      }
    }
    const command = typeof request.metadata?.command === "string" ? request.metadata.command : undefined
    this.add(
      request.id,
      h(
        "article",
        { class: "request permission", "aria-labelledby": titleID },
        h("h4", { id: titleID }, "Permission: ", h("code", {}, request.action)),
        command === undefined
          ? h(
              "ul",
              { class: "resources", "aria-label": "Resources" },
              ...request.resources.map((r) => h("li", {}, h("code", {}, r)))
            )
          : h("pre", { class: "command", "aria-label": "Command" }, command),
        h(
          "div",
          { role: "group", "aria-label": `Reply to the ${request.action} permission`, class: "actions" },
          ...buttons
        ),
        status
      )
    )
  }

  question(request: QuestionV2Request): void {
    if (this.cards.has(request.id)) return
    const titleID = `request-${request.id}`
    const status = h("p", { role: "alert", class: "error" })
    const pickers = request.questions.map((question, index) => {
      const name = `${request.id}-${index}`
      const inputs = question.options.map((option) =>
        h("input", { type: question.multiple === true ? "checkbox" : "radio", name, value: option.label })
      )
      const own = question.custom === false ? undefined : h("input", { type: "text", name: `${name}-own` })
      const fieldset = h(
        "fieldset",
        {},
        h("legend", {}, question.header === "" ? question.question : `${question.header}: ${question.question}`),
        ...question.options.map((option, i) =>
          h(
            "label",
            { class: "option" },
            inputs[i],
            ` ${option.label}`,
            option.description === "" ? null : h("span", { class: "muted" }, ` — ${option.description}`)
          )
        ),
        own === undefined ? null : h("label", { class: "option" }, "Your own answer ", own)
      )
      const answer = (): ReadonlyArray<string> => {
        const picked = inputs.filter((input) => input.checked).map((input) => input.value)
        const text = own?.value.trim() ?? ""
        return text === "" ? picked : [...picked, text]
      }
      return { fieldset, answer }
    })
    const form = h(
      "form",
      { class: "question-form" },
      ...pickers.map((p) => p.fieldset),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", class: "primary" }, "Send answers"),
        h("button", { type: "button", class: "danger", onclick: () => void settle("reject") }, "Dismiss question")
      ),
      status
    )
    const settle = async (how: "reply" | "reject") => {
      const buttons = Array.from(form.querySelectorAll("button"))
      for (const button of buttons) button.disabled = true
      status.textContent = ""
      try {
        if (how === "reply") {
          await this.client.questions.reply({
            sessionID: this.sessionID,
            requestID: request.id,
            answers: pickers.map((p) => p.answer())
          })
        } else {
          await this.client.questions.reject({ sessionID: this.sessionID, requestID: request.id })
        }
        this.resolved(request.id)
      } catch (error) {
        status.textContent = `The answer failed: ${describe(error)}`
        for (const button of buttons) button.disabled = false
      }
    }
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      void settle("reply")
    })
    this.add(
      request.id,
      h(
        "article",
        { class: "request question", "aria-labelledby": titleID },
        h("h4", { id: titleID }, "Question"),
        form
      )
    )
  }

  /** The request was answered (here or elsewhere): its card goes. */
  resolved(requestID: string): void {
    const card = this.cards.get(requestID)
    if (card === undefined) return
    const hadFocus = card.contains(document.activeElement)
    card.remove()
    this.cards.delete(requestID)
    this.section.hidden = this.cards.size === 0
    // Focus is not lost to the page's end: it goes to the next card, or back to the session heading.
    if (hadFocus) (this.list.querySelector<HTMLElement>("button") ?? byId("main")).focus()
  }

  private add(requestID: string, card: Child & HTMLElement): void {
    this.cards.set(requestID, card)
    this.list.append(card)
    this.section.hidden = false
  }
}
