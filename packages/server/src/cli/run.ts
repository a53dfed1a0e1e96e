export * as RunCommand from "./run.js"

import * as path from "node:path"
import { Args, Command, Options } from "@effect/cli"
import type { OpencodeClient } from "@opencode-ai/client/effect"
import {
  type Event,
  Identifier,
  InstanceEvent,
  type PermissionRequest,
  type Session,
  SessionError
} from "@opencode-ai/schema"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Queue, Schedule, Schema, Stream } from "effect"
import { CliConnection } from "./cli-connection.js"
import { CliError } from "./cli-error.js"
import { ExitCode } from "./exit-code.js"
import { PermissionPrompt } from "./permission-prompt.js"
import { RunOutput } from "./run-output.js"
import { TerminalStyle } from "./terminal-style.js"

/**
 * `opencode run "<prompt>"`: one turn of a session from the terminal. It creates a session (or
 * continues `--session`), subscribes to the live event stream, prompts, and shows the session as it
 * works until the session is idle again, then prints the turn's cost and tokens.
 *
 * ```
 *   connect ─► session (create | get + switch) ─► subscribe (server.connected) ─► prompt
 *     ─► render events + answer permission asks ─┬─ session idle ─► drain the stream to the turn's
 *                                                │                  last durable event ─► summary
 *                                                └─ Ctrl-C ─► interrupt the session ─► exit 130
 * ```
 *
 * Permission asks of the session (and of its subagents' sessions) are answered with `--yes` (once),
 * `--deny` (reject), interactively on a terminal (y once / a always / n no), and otherwise refused with
 * a message, since nobody could answer. A request answered elsewhere meanwhile (another client, a web
 * page) withdraws the local question. Exit statuses: see ExitCode.
 */

const prompt = Args.text({ name: "prompt" }).pipe(
  Args.atLeast(1),
  Args.withDescription("The prompt (several words are joined with spaces)")
)
const session = Options.text("session").pipe(
  Options.withAlias("s"),
  Options.optional,
  Options.withDescription("Continue this session instead of creating one")
)
const model = Options.text("model").pipe(
  Options.withAlias("m"),
  Options.optional,
  Options.withDescription("The model as provider/model (default: the configured model)")
)
const agent = Options.text("agent").pipe(Options.optional, Options.withDescription("The agent (default: build)"))
const dir = Options.text("dir").pipe(
  Options.optional,
  Options.withDescription("The directory a new session works in (default: the working directory when embedded)")
)
const format = Options.choice("format", ["default", "json"]).pipe(
  Options.withDefault("default" as const),
  Options.withDescription("default: the session as text; json: one event (JSON) per line")
)
const yes = Options.boolean("yes").pipe(Options.withDescription("Allow every permission ask (once each)"))
const deny = Options.boolean("deny").pipe(Options.withDescription("Refuse every permission ask"))

type Flags = {
  readonly prompt: ReadonlyArray<string>
  readonly attach: Option.Option<string>
  readonly password: Option.Option<string>
  readonly session: Option.Option<string>
  readonly model: Option.Option<string>
  readonly agent: Option.Option<string>
  readonly dir: Option.Option<string>
  readonly format: "default" | "json"
  readonly yes: boolean
  readonly deny: boolean
}

type V2Event = InstanceEvent.V2Event
type Client = OpencodeClient.Service

/**
 * What the turn loop takes, in arrival order: an event of the live stream, the stream's end, or the
 * session's idle (its `wait` answered). One queue, so an event that arrives with the idle is never
 * lost to a race between the two.
 */
type Item =
  | { readonly _tag: "Event"; readonly event: V2Event }
  | { readonly _tag: "End"; readonly error?: unknown }
  | { readonly _tag: "Idle"; readonly exit: Exit.Exit<unknown, CliError.Failure> }

/** How permission asks are answered. */
type Policy = "yes" | "deny" | "interactive" | "nobody"

const decodeSessionID = Schema.decodeUnknown(Identifier.SessionID)
const encodeEvent = Schema.encodeSync(InstanceEvent.V2Event)

const parseModel = (given: string): Effect.Effect<{ providerID: string; id: string }, CliError.Failure> => {
  const slash = given.indexOf("/")
  return slash <= 0 || slash === given.length - 1
    ? CliError.fail(ExitCode.usage, `--model ${given}: expected provider/model, e.g. anthropic/claude-sonnet-4`)
    : Effect.succeed({ providerID: given.slice(0, slash), id: given.slice(slash + 1) })
}

/** The turn's durable events after `after` (all pages). */
const durableAfter = (client: Client, sessionID: Identifier.SessionID, after: number) =>
  Effect.gen(function* () {
    const events: Array<Event.SessionDurableEvent> = []
    let cursor = after
    while (true) {
      const page = yield* client.sessions.history({ sessionID, after: cursor, limit: 1000 })
      events.push(...page.data)
      const last = page.data[page.data.length - 1]
      if (!page.hasMore || last?.durable === undefined) return events
      cursor = last.durable.seq
    }
  })

const describeAsk = (request: { readonly action: string; readonly resources: ReadonlyArray<string> }) =>
  `${request.action} ${request.resources.join(", ")}`.trim()

const replyWords: Record<PermissionRequest.PermissionV2Reply, string> = {
  once: "allowed once",
  always: "allowed always",
  reject: "refused"
}

const program = (flags: Flags) =>
  Effect.gen(function* () {
    if (flags.yes && flags.deny) return yield* CliError.fail(ExitCode.usage, "--yes and --deny cannot be used together")
    const modelRef = Option.isSome(flags.model) ? Option.some(yield* parseModel(flags.model.value)) : Option.none()
    const attached = Option.isSome(flags.attach)
    const directory = Option.map(flags.dir, (given) => path.resolve(given))
    const connection = yield* CliConnection.open({
      attach: flags.attach,
      password: flags.password,
      directory: Option.getOrUndefined(directory)
    })
    const { client } = connection
    const explain = CliConnection.explain(connection)
    const env = process.env
    const json = flags.format === "json"

    // The transcript goes to stdout; questions go where a person sees them.
    const transcriptStyle = TerminalStyle.make(!json && TerminalStyle.enabled(process.stdout, env))
    const transcript = RunOutput.make({
      write: (text) => void process.stdout.write(text),
      style: transcriptStyle,
      columns: () => process.stdout.columns
    })
    const onStdout = !json && process.stdout.isTTY === true
    const ui = onStdout
      ? transcript
      : RunOutput.make({
          write: (text) => void process.stderr.write(text),
          style: TerminalStyle.make(TerminalStyle.enabled(process.stderr, env)),
          columns: () => process.stderr.columns
        })
    const notes = json ? ui : transcript
    const policy: Policy = flags.yes
      ? "yes"
      : flags.deny
        ? "deny"
        : process.stdin.isTTY === true
          ? "interactive"
          : "nobody"

    // The session: created, or continued (with the asked-for agent and model switched to).
    const info: Session.SessionV2Info = yield* (
      Option.isNone(flags.session)
        ? client.sessions.create({
            ...(Option.isSome(flags.agent) ? { agent: flags.agent.value } : {}),
            ...(Option.isSome(modelRef) ? { model: modelRef.value } : {}),
            ...(attached && Option.isSome(directory) ? { location: { directory: directory.value } } : {})
          })
        : Effect.gen(function* () {
            const given = Option.getOrThrow(flags.session)
            const sessionID = yield* decodeSessionID(given).pipe(
              Effect.mapError(
                () =>
                  new CliError.Failure({ exitCode: ExitCode.usage, message: `--session ${given}: not a session id` })
              )
            )
            const existing = yield* client.sessions.get({ sessionID })
            if (Option.isSome(flags.agent)) yield* client.sessions.switchAgent({ sessionID, agent: flags.agent.value })
            if (Option.isSome(modelRef)) yield* client.sessions.switchModel({ sessionID, model: modelRef.value })
            return existing
          })
    ).pipe(Effect.mapError((error: unknown) => (error instanceof CliError.Failure ? error : explain(error))))
    const sessionID = info.id

    // The live stream first, so that nothing the prompt causes is missed.
    const items = yield* Queue.unbounded<Item>()
    const connected = yield* Deferred.make<void, CliError.Failure>()
    yield* client.events.subscribe().pipe(
      Stream.runForEach((event) =>
        event.type === "server.connected"
          ? Deferred.succeed(connected, undefined)
          : Queue.offer(items, { _tag: "Event", event })
      ),
      Effect.exit,
      Effect.flatMap((exit) =>
        Effect.zipRight(
          Exit.isFailure(exit) ? Deferred.fail(connected, explain(Cause.squash(exit.cause))) : Effect.void,
          Queue.offer(items, Exit.isFailure(exit) ? { _tag: "End", error: Cause.squash(exit.cause) } : { _tag: "End" })
        )
      ),
      Effect.forkScoped
    )
    yield* Deferred.await(connected)
    if (transcriptStyle.ansi) {
      yield* Effect.sync(transcript.tick).pipe(Effect.repeat(Schedule.spaced("80 millis")), Effect.forkScoped)
    }

    // Permission asks: answered by policy, or by a person, one question at a time.
    const family = new Set<string>([sessionID])
    const known = new Map<string, string>()
    const answeredHere = new Set<string>()
    const questions = new Map<string, { readonly fiber: Fiber.RuntimeFiber<void>; elsewhere?: string }>()
    const terminal = yield* Effect.makeSemaphore(1)
    let refused = 0

    const reply = (
      request: PermissionRequest.PermissionV2Request,
      answer: PermissionRequest.PermissionV2Reply,
      message?: string
    ) =>
      Effect.gen(function* () {
        answeredHere.add(request.id)
        const sent = yield* client.permissions
          .reply({
            sessionID: request.sessionID,
            requestID: request.id,
            reply: answer,
            ...(message === undefined ? {} : { message })
          })
          .pipe(
            Effect.as(true),
            Effect.catchTag("PermissionNotFoundError", () => Effect.succeed(false)),
            Effect.mapError(explain)
          )
        if (sent && answer === "reject") refused++
        return sent
      })

    const ask = (request: PermissionRequest.PermissionV2Request) =>
      Effect.gen(function* () {
        const what = describeAsk(request)
        switch (policy) {
          case "yes": {
            if (yield* reply(request, "once")) notes.note(`permission ${what}: allowed once (--yes)`)
            return
          }
          case "deny": {
            if (yield* reply(request, "reject", "The user refused this (opencode run --deny).")) {
              notes.note(`permission ${what}: refused (--deny)`)
            }
            return
          }
          case "nobody": {
            const sent = yield* reply(
              request,
              "reject",
              "Nobody could answer this permission request (opencode run without a terminal)."
            )
            if (sent)
              notes.error(`permission ${what}: refused, no terminal to ask (pass --yes to allow, --deny to refuse)`)
            return
          }
          case "interactive": {
            let shown = false
            const question = terminal.withPermits(1)(
              Effect.gen(function* () {
                shown = true
                ui.question(`Allow ${what}? ${PermissionPrompt.keys}`)
                const answer = yield* PermissionPrompt.read(process.stdin)
                const sent = yield* reply(request, answer)
                ui.endQuestion(
                  sent ? `permission ${what}: ${replyWords[answer]}` : `permission ${what}: already answered elsewhere`
                )
              })
            )
            const fiber = yield* question.pipe(
              Effect.onInterrupt(() =>
                Effect.sync(() => {
                  const elsewhere = questions.get(request.id)?.elsewhere
                  const outcome = `permission ${what}: answered elsewhere${elsewhere === undefined ? "" : ` (${elsewhere})`}`
                  if (shown) ui.endQuestion(outcome)
                  else notes.note(outcome)
                })
              ),
              Effect.catchAll((failure) => Effect.sync(() => notes.error(failure.message))),
              Effect.ensuring(Effect.sync(() => questions.delete(request.id))),
              Effect.forkScoped
            )
            questions.set(request.id, { fiber })
            return
          }
        }
      })

    const onAsk = (request: PermissionRequest.PermissionV2Request) =>
      known.has(request.id)
        ? Effect.void
        : Effect.zipRight(
            Effect.sync(() => known.set(request.id, describeAsk(request))),
            ask(request)
          )

    const onReplied = (requestID: string, answer: PermissionRequest.PermissionV2Reply) =>
      Effect.gen(function* () {
        if (answeredHere.has(requestID) || !known.has(requestID)) return
        if (answer === "reject") refused++
        const question = questions.get(requestID)
        if (question !== undefined) {
          question.elsewhere = replyWords[answer]
          yield* Fiber.interrupt(question.fiber)
        } else {
          notes.note(`permission ${known.get(requestID)}: answered elsewhere (${replyWords[answer]})`)
        }
      })

    /** Shows one event of the session's family; returns the session's durable seq it carried, if any. */
    const show = (event: V2Event) =>
      Effect.gen(function* () {
        if (event.type === "session.created" && event.data.info.parentID !== undefined) {
          if (family.has(event.data.info.parentID)) family.add(event.data.sessionID)
        }
        const eventSession = "data" in event && "sessionID" in event.data ? String(event.data.sessionID) : undefined
        if (eventSession === undefined || !family.has(eventSession)) return
        if (json) process.stdout.write(`${JSON.stringify(encodeEvent(event))}\n`)
        if (event.type === "permission.v2.asked") {
          const { data } = event
          return yield* onAsk({
            id: data.id,
            sessionID: data.sessionID,
            action: data.action,
            resources: data.resources,
            ...(data.save === undefined ? {} : { save: data.save }),
            ...(data.metadata === undefined ? {} : { metadata: data.metadata }),
            ...(data.source === undefined ? {} : { source: data.source })
          })
        }
        if (event.type === "permission.v2.replied") return yield* onReplied(event.data.requestID, event.data.reply)
        // Subagents' sessions: only their permission asks are shown here (their work shows as the task call).
        if (json || eventSession !== sessionID) return
        switch (event.type) {
          case "session.next.text.started":
            return transcript.textStarted(event.data.textID)
          case "session.next.text.delta":
            return transcript.textDelta(event.data.textID, event.data.delta)
          case "session.next.text.ended":
            return transcript.textEnded(event.data.textID, event.data.text)
          case "session.next.reasoning.started":
            return transcript.reasoningStarted(event.data.reasoningID)
          case "session.next.reasoning.ended":
            return transcript.reasoningEnded(event.data.reasoningID, event.data.text)
          case "session.next.tool.input.started":
            return transcript.toolInputStarted(event.data.callID, event.data.name)
          case "session.next.tool.called":
            return transcript.toolCalled(event.data.callID, event.data.tool, event.data.input)
          case "session.next.tool.success":
            return transcript.toolSucceeded(event.data.callID, event.data.content, event.data.outputPaths)
          case "session.next.tool.failed":
            return transcript.toolFailed(event.data.callID, event.data.error.message)
          case "session.next.step.failed":
            return transcript.error(`error: ${SessionError.messageOf(event.data.error)}`)
          case "session.next.retried":
            return transcript.note(`retrying (attempt ${event.data.attempt}): ${event.data.error.message}`)
          case "session.next.compaction.started":
            return transcript.note("compacting the conversation…")
          case "session.next.compaction.ended":
            return transcript.note("conversation compacted")
          default:
            return
        }
      })

    const sessionSeq = (event: V2Event) =>
      "durable" in event && event.durable !== undefined && event.durable.aggregateID === sessionID
        ? event.durable.seq
        : -1

    const turn = Effect.gen(function* () {
      const admitted = yield* client.sessions
        .prompt({ sessionID, prompt: { text: flags.prompt.join(" ") } })
        .pipe(Effect.mapError(explain))
      // Asks that were already pending (a continued session).
      const pending = yield* client.permissions.list({ sessionID }).pipe(Effect.mapError(explain))
      yield* Effect.forEach(pending, onAsk, { discard: true })

      // A long turn may outlive one HTTP request's deadline: waiting is simply asked again.
      const idle = yield* client.sessions.wait({ sessionID }).pipe(
        Effect.retry({ while: (error) => error._tag === "RequestError", schedule: Schedule.spaced("1 second") }),
        Effect.mapError(explain),
        Effect.exit,
        Effect.flatMap((exit) => Queue.offer(items, { _tag: "Idle", exit })),
        Effect.fork
      )
      let seen = admitted.admittedSeq
      // Running: show events until the session is idle (or the stream ends).
      while (true) {
        const item = yield* Queue.take(items)
        if (item._tag === "Idle") {
          if (Exit.isFailure(item.exit)) return yield* Effect.failCause(item.exit.cause)
          break
        }
        if (item._tag === "End") {
          yield* Fiber.interrupt(idle)
          return yield* CliError.fail(
            ExitCode.failed,
            item.error === undefined
              ? `the server at ${connection.target} closed the event stream before the session was idle`
              : explain(item.error).message
          )
        }
        seen = Math.max(seen, sessionSeq(item.event))
        yield* show(item.event)
      }
      // Idle: the turn is in the durable log; show what the stream still holds of it.
      const events = yield* durableAfter(client, sessionID, admitted.admittedSeq).pipe(Effect.mapError(explain))
      const last = events.reduce((max, event) => Math.max(max, event.durable?.seq ?? 0), admitted.admittedSeq)
      while (seen < last) {
        const item = yield* Queue.take(items).pipe(Effect.timeout("2 seconds"), Effect.option)
        if (Option.isNone(item) || item.value._tag !== "Event") break
        seen = Math.max(seen, sessionSeq(item.value.event))
        yield* show(item.value.event)
      }
      return events
    })

    const events = yield* turn.pipe(
      Effect.onInterrupt(() =>
        client.sessions.interrupt({ sessionID }).pipe(
          Effect.ignore,
          Effect.zipRight(
            Effect.sync(() => {
              transcript.close()
              ui.close()
              process.stderr.write(`opencode: interrupted; session ${sessionID} stopped\n`)
            })
          ),
          Effect.zipRight(ExitCode.setOnInterrupt(ExitCode.interrupted))
        )
      )
    )

    // The outcome: the turn's Steps say whether it failed, and what it cost.
    let failure: string | undefined
    let cost = 0
    const tokens = { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }
    for (const event of events) {
      if (event.type === "session.next.step.failed") failure = SessionError.messageOf(event.data.error)
      if (event.type === "session.next.step.ended") failure = undefined
      if (event.type === "session.next.step.ended" || event.type === "session.next.usage.recorded") {
        cost += event.data.cost
        tokens.input += event.data.tokens.input
        tokens.output += event.data.tokens.output
        tokens.reasoning += event.data.tokens.reasoning
        tokens.cache.read += event.data.tokens.cache.read
        tokens.cache.write += event.data.tokens.cache.write
      }
    }
    if (!json) transcript.summary(sessionID, cost, tokens)
    transcript.close()
    ui.close()
    if (failure !== undefined) return yield* CliError.fail(ExitCode.failed, `the turn failed: ${failure}`)
    if (refused > 0) {
      return yield* CliError.fail(
        ExitCode.denied,
        `${refused} permission request${refused === 1 ? " was" : "s were"} refused`
      )
    }
  }).pipe(Effect.scoped)

export const command = Command.make(
  "run",
  {
    prompt,
    attach: CliConnection.attach,
    password: CliConnection.password,
    session,
    model,
    agent,
    dir,
    format,
    yes,
    deny
  },
  (flags) =>
    // Interrupted before the turn began (connecting, creating the session): nothing to stop, still 130.
    CliError.report(program(flags)).pipe(Effect.onInterrupt(() => ExitCode.setOnInterrupt(ExitCode.interrupted)))
).pipe(Command.withDescription("Prompt a session and show it working until it is idle (exit codes: see the docs)"))
