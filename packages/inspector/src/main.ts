/**
 * The live session inspector: the page `opencode serve` serves at `/`. It talks to the server it
 * came from (same origin, so the browser's Basic auth covers its calls) through the Promise client:
 * - the session list (title, running or idle, cost, tokens, pending requests), kept current by the
 *   global event stream (`/api/event`);
 * - the selected session (`#session=<id>`): its transcript and Step timeline from the session's
 *   durable stream, its pending permission and question requests with reply controls. With none
 *   selected, the next new top-level session is opened as it starts.
 * A broken stream is reopened after a second; the session stream resumes after the last sequence
 * number it applied, and the list and pending requests are reloaded for what was missed.
 */
import { createOpencodeClient, type SessionV2Info, type V2Event } from "@opencode-ai/client"
import { byId, h } from "./dom.js"
import * as Format from "./format.js"
import { Requests } from "./requests.js"
import { Transcript } from "./transcript.js"

const client = createOpencodeClient({ baseUrl: window.location.origin })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const sessions = new Map<string, SessionV2Info>()
const running = new Set<string>()
/** Pending requests per session: their ids. */
const pending = new Map<string, Set<string>>()

const connection = byId("connection")
const sessionList = byId<HTMLUListElement>("sessions")

const sessionIDOf = (event: V2Event): string | undefined => {
  const data = event.data as { readonly sessionID?: unknown }
  return typeof data.sessionID === "string" ? data.sessionID : undefined
}

// --- The session list -------------------------------------------------------------------------

const selectedID = (): string | undefined => {
  const match = /^#session=(.+)$/.exec(window.location.hash)
  return match === null ? undefined : decodeURIComponent(match[1]!)
}

const renderList = (): void => {
  const selected = selectedID()
  const items = [...sessions.values()]
    .sort((a, b) => b.time.updated - a.time.updated)
    .map((session) => {
      const status = running.has(session.id) ? "running" : "idle"
      const waiting = pending.get(session.id)?.size ?? 0
      return h(
        "li",
        {},
        h(
          "a",
          {
            class: "session",
            href: `#session=${encodeURIComponent(session.id)}`,
            "aria-current": session.id === selected ? "page" : undefined,
            "data-session": session.id
          },
          h("span", { class: "title" }, session.title === "" ? session.id : session.title),
          h("span", { class: `status status-${status}` }, status),
          h("span", { class: "usage" }, `${Format.cost(session.cost)} · ${Format.tokens(session.tokens)}`),
          waiting > 0 ? h("span", { class: "badge" }, `${waiting} waiting for a reply`) : null
        )
      )
    })
  sessionList.replaceChildren(...items)
  byId("sessions-empty").hidden = items.length > 0
}

const loadList = async (): Promise<void> => {
  const [page, active, permissions, questions] = await Promise.all([
    client.sessions.list({ limit: 100, order: "desc" }),
    client.sessions.active({}),
    client.permissions.listRequests({}),
    client.questions.listRequests({})
  ])
  sessions.clear()
  for (const session of page.items) sessions.set(session.id, session)
  running.clear()
  for (const id of Object.keys(active)) running.add(id)
  pending.clear()
  for (const request of [...permissions.data, ...questions.data]) {
    pending.set(request.sessionID, (pending.get(request.sessionID) ?? new Set()).add(request.id))
  }
  renderList()
  if (running.size > 0) void watchRunning()
  if (view !== undefined) renderHeader(view.sessionID)
}

const refreshSession = async (sessionID: string): Promise<void> => {
  try {
    sessions.set(sessionID, await client.sessions.get({ sessionID }))
  } catch {
    sessions.delete(sessionID)
  }
  renderList()
  if (view?.sessionID === sessionID) renderHeader(sessionID)
}

let watching = false
/**
 * Learns when running sessions go idle without polling: `wait` answers once a session is idle; then
 * the `active` snapshot says which are still running. One connection at a time, whatever the count.
 */
const watchRunning = async (): Promise<void> => {
  if (watching) return
  watching = true
  try {
    for (let next = running.values().next(); !next.done; next = running.values().next()) {
      try {
        await client.sessions.wait({ sessionID: next.value })
        const active = await client.sessions.active({})
        running.clear()
        for (const id of Object.keys(active)) running.add(id)
        void refreshSession(next.value)
      } catch {
        await sleep(1000)
      }
      renderList()
      if (view !== undefined) renderHeader(view.sessionID)
    }
  } finally {
    watching = false
  }
}

// --- The selected session ---------------------------------------------------------------------

interface View {
  readonly sessionID: string
  readonly transcript: Transcript
  readonly requests: Requests
  readonly abort: AbortController
}
let view: View | undefined

const renderHeader = (sessionID: string): void => {
  const session = sessions.get(sessionID)
  byId("session-title").textContent =
    session === undefined ? sessionID : session.title === "" ? sessionID : session.title
  byId("session-meta").textContent =
    session === undefined
      ? ""
      : `${running.has(sessionID) ? "Running" : "Idle"} · ${Format.cost(session.cost)} · ${Format.tokens(session.tokens)} · ${session.location.directory}`
}

const followSession = async (current: View): Promise<void> => {
  while (!current.abort.signal.aborted) {
    try {
      const stream = client.sessions.events(
        { sessionID: current.sessionID, after: current.transcript.seq },
        { signal: current.abort.signal }
      )
      for await (const event of stream) current.transcript.durable(event)
    } catch (error) {
      if (current.abort.signal.aborted) return
      if (
        typeof error === "object" &&
        error !== null &&
        (error as { _tag?: unknown })._tag === "SessionNotFoundError"
      ) {
        byId("session-meta").textContent = "This session does not exist."
        return
      }
    }
    await sleep(1000)
  }
}

const select = (sessionID: string | undefined): void => {
  if (view?.sessionID === sessionID) return
  view?.abort.abort()
  view?.requests.clear()
  view = undefined
  renderList()
  if (sessionID === undefined) {
    byId("session-title").textContent = "No session selected"
    byId("session-meta").textContent = "Choose a session from the list."
    Transcript.clear()
    return
  }
  const current: View = {
    sessionID,
    transcript: new Transcript(),
    requests: new Requests(client, sessionID),
    abort: new AbortController()
  }
  view = current
  renderHeader(sessionID)
  if (!sessions.has(sessionID)) void refreshSession(sessionID)
  void current.requests.load().catch(() => undefined)
  void followSession(current)
}

/**
 * With no session chosen, a new top-level session (e.g. one `opencode run` just started) is shown as
 * it starts. The address changes without a history entry, and focus stays where it is.
 */
const followNew = (sessionID: string): void => {
  if (selectedID() !== undefined || view !== undefined) return
  if (sessions.get(sessionID)?.parentID !== undefined) return
  window.history.replaceState(null, "", `#session=${encodeURIComponent(sessionID)}`)
  select(sessionID)
}

// --- The global stream ------------------------------------------------------------------------

const onEvent = (event: V2Event): void => {
  const sessionID = sessionIDOf(event)
  switch (event.type) {
    case "server.connected":
      connection.textContent = "Live"
      return
    case "session.created":
      if (sessionID !== undefined) void refreshSession(sessionID).then(() => followNew(sessionID))
      return
    case "session.updated":
      if (sessionID !== undefined) void refreshSession(sessionID)
      return
    case "session.next.prompted":
    case "session.next.step.started":
      if (sessionID !== undefined && !running.has(sessionID)) {
        running.add(sessionID)
        renderList()
        if (view?.sessionID === sessionID) renderHeader(sessionID)
        void watchRunning()
      }
      return
    case "permission.v2.asked":
    case "question.v2.asked": {
      if (sessionID === undefined) return
      const ids = pending.get(sessionID) ?? new Set<string>()
      ids.add(event.data.id)
      pending.set(sessionID, ids)
      renderList()
      if (view?.sessionID === sessionID) {
        if (event.type === "permission.v2.asked") view.requests.permission(event.data)
        else view.requests.question(event.data)
      }
      return
    }
    case "permission.v2.replied":
    case "question.v2.replied":
    case "question.v2.rejected": {
      if (sessionID === undefined) return
      pending.get(sessionID)?.delete(event.data.requestID)
      renderList()
      if (view?.sessionID === sessionID) view.requests.resolved(event.data.requestID)
      return
    }
    default:
      if (sessionID !== undefined && view?.sessionID === sessionID) view.transcript.live(event)
  }
}

const followAll = async (): Promise<void> => {
  for (;;) {
    try {
      const stream = client.events.subscribe({})
      let first = true
      for await (const event of stream) {
        onEvent(event)
        if (first) {
          first = false
          // Whatever happened while the stream was closed: reload the list and the pending requests.
          await loadList()
          if (view !== undefined) await view.requests.load()
        }
      }
      connection.textContent = "The server closed the event stream; reconnecting…"
    } catch (error) {
      connection.textContent = `Disconnected (${error instanceof Error ? error.message : String(error)}); reconnecting…`
    }
    await sleep(1000)
  }
}

window.addEventListener("hashchange", () => {
  select(selectedID())
  byId("main").focus()
})
select(selectedID())
void followAll()
