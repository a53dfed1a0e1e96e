import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { type AdmittedPrompt, Errors, Identifier } from "@opencode-ai/schema"
import { Cause, Effect, Exit } from "effect"
import { describe, expect } from "vitest"
import { EventLog } from "../../src/event/event-log.js"
import { SessionInput } from "../../src/input/session-input.js"
import { SessionEvents } from "../../src/session/session-events.js"
import { SessionHistory } from "../../src/session/session-history.js"
import { createSession, type World, withCore } from "../session/world.js"

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const promoterScript = path.join(packageDir, "test", "input", "promoter.child.ts")

const input = Effect.map(SessionInput.Service, (service) => service)

const eventTypes = (sessionID: Identifier.SessionID) =>
  Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)).pipe(
    Effect.map((events) => events.map((event) => event.type))
  )

/** The user messages of the session's history, oldest first, by text. */
const userTexts = (sessionID: Identifier.SessionID) =>
  Effect.flatMap(SessionHistory.Service, (history) => history.messages(sessionID, { order: "asc", limit: 200 })).pipe(
    Effect.map((page) => page.data.flatMap((message) => (message.type === "user" ? [message.text] : [])))
  )

const promotedSeqs = (sessionID: Identifier.SessionID) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{
        id: string
        promoted_seq: number | null
      }>`SELECT id, promoted_seq FROM session_input WHERE session_id = ${sessionID} ORDER BY admitted_seq`
  ).pipe(Effect.orDie)

describe("SessionInput.admit", () => {
  it.scoped("admits durably (prompt.admitted + inbox entry), steer by default, not yet history", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const inbox = yield* input
        const session = yield* createSession(w)
        const admitted = yield* inbox.admit(session.id, { prompt: { text: "hello" } })
        expect(admitted).toEqual({
          admittedSeq: 1,
          id: admitted.id,
          sessionID: session.id,
          prompt: { text: "hello" },
          delivery: "steer",
          timeCreated: admitted.timeCreated
        })
        expect(admitted.id).toMatch(/^msg_/)
        expect(yield* eventTypes(session.id)).toEqual(["session.next.prompt.admitted"])
        const [event] = yield* (yield* EventLog.Service).read(session.id)
        expect(event?.data).toEqual({
          timestamp: admitted.timeCreated,
          sessionID: session.id,
          messageID: admitted.id,
          prompt: { text: "hello" },
          delivery: "steer"
        })
        expect(yield* inbox.pending(session.id)).toEqual([admitted])
        expect(yield* userTexts(session.id)).toEqual([])
      })
    )
  )

  it.scoped(
    "is idempotent by id: the same prompt (any key order) returns the stored record, promotedSeq included, and appends nothing",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const inbox = yield* input
          const session = yield* createSession(w)
          const id = Identifier.newMessageID()
          const prompt: AdmittedPrompt.PromptInput = {
            text: "hi",
            agents: [{ name: "plan", source: { start: 0, end: 5, text: "@plan" } }]
          }
          const first = yield* inbox.admit(session.id, { id, prompt, delivery: "queue" })
          const reordered = { agents: [{ source: { text: "@plan", end: 5, start: 0 }, name: "plan" }], text: "hi" }
          expect(yield* inbox.admit(session.id, { id, prompt: reordered, delivery: "queue" })).toEqual(first)
          expect(yield* eventTypes(session.id)).toHaveLength(1)

          expect(yield* inbox.promoteNextQueued(session.id)).toBe(true)
          expect(yield* inbox.admit(session.id, { id, prompt, delivery: "queue" })).toEqual({
            ...first,
            promotedSeq: 2
          })
          expect(yield* eventTypes(session.id)).toEqual(["session.next.prompt.admitted", "session.next.prompted"])
        })
      )
  )

  it.scoped(
    "the same id with other content, delivery or session, or naming a message in history, is a ConflictError",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const inbox = yield* input
          const session = yield* createSession(w)
          const other = yield* createSession(w)
          const id = Identifier.newMessageID()
          yield* inbox.admit(session.id, { id, prompt: { text: "a" } })
          const conflict = (exit: Exit.Exit<unknown, unknown>) => {
            expect(Exit.isFailure(exit)).toBe(true)
            const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : undefined
            expect(error?._tag === "Some" && error.value).toMatchObject({ _tag: "ConflictError", resource: "prompt" })
          }
          conflict(yield* Effect.exit(inbox.admit(session.id, { id, prompt: { text: "b" } })))
          conflict(yield* Effect.exit(inbox.admit(session.id, { id, prompt: { text: "a" }, delivery: "queue" })))
          conflict(yield* Effect.exit(inbox.admit(other.id, { id, prompt: { text: "a" } })))

          const assistant = Identifier.newMessageID()
          yield* (yield* SessionEvents.Service).append(session.id, [
            SessionEvents.draft("session.next.step.started", {
              timestamp: 1,
              sessionID: session.id,
              assistantMessageID: assistant,
              agent: "build",
              model: { id: "qwen", providerID: "local" }
            })
          ])
          conflict(yield* Effect.exit(inbox.admit(session.id, { id: assistant, prompt: { text: "a" } })))
          expect((yield* inbox.pending(session.id)).map((record) => record.id)).toEqual([id])
          expect(yield* eventTypes(other.id)).toEqual([])
        })
      )
  )

  it.scoped("an unknown session is SessionNotFoundError, and nothing is written", () =>
    withCore(() =>
      Effect.gen(function* () {
        const inbox = yield* input
        expect(
          yield* Effect.exit(inbox.admit(Identifier.SessionID.make("ses_missing"), { prompt: { text: "x" } }))
        ).toEqual(Exit.fail(Errors.SessionNotFoundError.of("ses_missing")))
        expect(yield* Effect.exit(inbox.pending(Identifier.SessionID.make("ses_missing")))).toEqual(
          Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
        )
        expect(yield* Effect.exit(inbox.promoteSteers(Identifier.SessionID.make("ses_missing")))).toEqual(
          Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
        )
        expect(yield* (yield* EventLog.Service).read("ses_missing")).toEqual([])
      })
    )
  )

  it.scoped(
    "file attachments resolve against the session's Location to file:// URLs with a media type; unreadable ones are rejected",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const inbox = yield* input
          const session = yield* createSession(w)
          fs.mkdirSync(path.join(w.dir, "src"))
          fs.writeFileSync(path.join(w.dir, "src", "main.ts"), "export {}\n")
          fs.writeFileSync(path.join(w.dir, "logo.png"), "")
          fs.writeFileSync(path.join(w.dir, "Makefile"), "all:\n")
          const admitted = yield* inbox.admit(session.id, {
            prompt: {
              text: "look at @main",
              files: [
                { uri: "src/main.ts", name: "main", source: { start: 8, end: 13, text: "@main" } },
                { uri: pathToFileURL(path.join(w.dir, "logo.png")).href },
                { uri: path.join(w.dir, "Makefile") },
                { uri: "src", description: "the sources" },
                { uri: "data:application/json;base64,e30=" },
                { uri: "data:,hello" },
                { uri: "https://example.com/spec.pdf" }
              ]
            }
          })
          const url = (file: string) => pathToFileURL(path.join(w.dir, file)).href
          expect(admitted.prompt.files).toEqual([
            {
              uri: url("src/main.ts"),
              mime: "text/x-typescript",
              name: "main",
              source: { start: 8, end: 13, text: "@main" }
            },
            { uri: url("logo.png"), mime: "image/png" },
            { uri: url("Makefile"), mime: "text/plain" },
            { uri: url("src"), mime: "application/x-directory", description: "the sources" },
            { uri: "data:application/json;base64,e30=", mime: "application/json" },
            { uri: "data:,hello", mime: "text/plain" },
            { uri: "https://example.com/spec.pdf", mime: "application/pdf" }
          ])

          const rejected = (uri: string) =>
            Effect.map(
              Effect.flip(inbox.admit(session.id, { prompt: { text: "x", files: [{ uri: "src" }, { uri }] } })),
              (error) => ({
                tag: error._tag,
                field: error._tag === "InvalidRequestError" ? error.field : undefined
              })
            )
          for (const uri of [
            "missing.txt",
            "file:///definitely/not/here",
            "ftp://example.com/a",
            "data:nocomma",
            "file://host:bad/x"
          ]) {
            expect({ uri, ...(yield* rejected(uri)) }).toEqual({
              uri,
              tag: "InvalidRequestError",
              field: "prompt.files.1.uri"
            })
          }
          expect(yield* eventTypes(session.id)).toEqual(["session.next.prompt.admitted"])
        })
      )
  )
})

describe("SessionInput promotion", () => {
  it.scoped("promoteSteers promotes every pending steer in admission order; queued prompts promote one at a time", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const inbox = yield* input
        const session = yield* createSession(w)
        const admit = (text: string, delivery: AdmittedPrompt.Delivery) =>
          inbox.admit(session.id, { prompt: { text }, delivery })
        expect(yield* inbox.hasPending(session.id)).toBe(false)
        expect(yield* SessionInput.pendingSessions()).not.toContain(session.id)
        const s1 = yield* admit("steer 1", "steer")
        expect(yield* inbox.hasPending(session.id)).toBe(true)
        expect(yield* SessionInput.pendingSessions()).toContain(session.id)
        yield* admit("queue 1", "queue")
        yield* admit("steer 2", "steer")
        yield* admit("queue 2", "queue")

        expect(yield* inbox.promoteSteers(session.id)).toBe(2)
        expect(yield* userTexts(session.id)).toEqual(["steer 1", "steer 2"])
        expect((yield* inbox.pending(session.id)).map((p) => p.prompt.text)).toEqual(["queue 1", "queue 2"])
        expect(yield* inbox.promoteSteers(session.id)).toBe(0)

        expect(yield* inbox.promoteNextQueued(session.id)).toBe(true)
        expect(yield* userTexts(session.id)).toEqual(["steer 1", "steer 2", "queue 1"])
        expect(yield* inbox.promoteNextQueued(session.id)).toBe(true)
        expect(yield* inbox.promoteNextQueued(session.id)).toBe(false)
        expect(yield* userTexts(session.id)).toEqual(["steer 1", "steer 2", "queue 1", "queue 2"])
        expect(yield* inbox.pending(session.id)).toEqual([])
        expect(yield* inbox.hasPending(session.id)).toBe(false)
        expect(yield* SessionInput.pendingSessions()).not.toContain(session.id)

        // Each prompted event carries the admitted prompt; promoted_seq is its seq.
        const log = yield* (yield* EventLog.Service).read(session.id)
        expect(log.map((event) => event.type)).toEqual([
          ...Array(4).fill("session.next.prompt.admitted"),
          ...Array(4).fill("session.next.prompted")
        ])
        expect(log[4]?.data).toMatchObject({ messageID: s1.id, prompt: { text: "steer 1" }, delivery: "steer" })
        expect((yield* promotedSeqs(session.id)).map((row) => row.promoted_seq)).toEqual([5, 7, 6, 8])
        expect(yield* (yield* SessionHistory.Service).message(session.id, s1.id)).toEqual({
          id: s1.id,
          time: { created: expect.any(Number) },
          type: "user",
          text: "steer 1"
        })
      })
    )
  )

  it.scoped("a cutoff promotes only the steers admitted at or before it", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const inbox = yield* input
        const session = yield* createSession(w)
        const early = yield* inbox.admit(session.id, { prompt: { text: "early" } })
        yield* inbox.admit(session.id, { prompt: { text: "late" } })
        expect(yield* inbox.promoteSteers(session.id, early.admittedSeq)).toBe(1)
        expect(yield* userTexts(session.id)).toEqual(["early"])
        expect(yield* inbox.promoteSteers(session.id, early.admittedSeq)).toBe(0)
        expect(yield* inbox.promoteSteers(session.id)).toBe(1)
        expect(yield* userTexts(session.id)).toEqual(["early", "late"])
      })
    )
  )

  it.scoped(
    "promotion is one transaction: when consuming one entry fails, no prompted event, message or promoted_seq is kept",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const inbox = yield* input
          const sql = yield* SqlClient.SqlClient
          const session = yield* createSession(w)
          yield* inbox.admit(session.id, { prompt: { text: "one" } })
          const two = yield* inbox.admit(session.id, { prompt: { text: "two" } })
          // (Trigger syntax is the one place the dialects differ here.)
          yield* sql.onDialectOrElse({
            pg: () =>
              Effect.zipRight(
                sql.unsafe(`CREATE FUNCTION refuse_promotion() RETURNS trigger LANGUAGE plpgsql
                  AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`),
                sql.unsafe(`CREATE TRIGGER refuse_promotion BEFORE UPDATE OF promoted_seq ON session_input
                  FOR EACH ROW WHEN (NEW.id = '${two.id}') EXECUTE FUNCTION refuse_promotion()`)
              ),
            orElse: () =>
              sql.unsafe(`CREATE TRIGGER refuse_promotion BEFORE UPDATE OF promoted_seq ON session_input
                WHEN NEW.id = '${two.id}' BEGIN SELECT RAISE(ABORT, 'refused'); END`)
          })
          const exit = yield* Effect.exit(inbox.promoteSteers(session.id))
          expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
          expect(yield* eventTypes(session.id)).toEqual([
            "session.next.prompt.admitted",
            "session.next.prompt.admitted"
          ])
          expect(yield* userTexts(session.id)).toEqual([])
          expect((yield* promotedSeqs(session.id)).map((row) => row.promoted_seq)).toEqual([null, null])
          const [session_] = yield* sql<{ info: string }>`SELECT info FROM session WHERE id = ${session.id}`
          expect(JSON.parse(session_!.info).time.updated).toBe(session.time.updated)

          yield* sql.onDialectOrElse({
            pg: () => sql`DROP TRIGGER refuse_promotion ON session_input`,
            orElse: () => sql`DROP TRIGGER refuse_promotion`
          })
          expect(yield* inbox.promoteSteers(session.id)).toBe(2)
          expect(yield* userTexts(session.id)).toEqual(["one", "two"])
        })
      )
  )

  /**
   * Admits 40 prompts to a new session, three in four queued (each queued one is promoted by its own
   * transaction, so promoters contend often); resolves with the session and the texts.
   */
  const fill = (w: World) =>
    Effect.gen(function* () {
      const inbox = yield* input
      const session = yield* createSession(w)
      const texts = Array.from({ length: 40 }, (_, i) => `prompt ${i}`)
      for (const [i, text] of texts.entries()) {
        yield* inbox.admit(session.id, { prompt: { text }, delivery: i % 4 === 0 ? "steer" : "queue" })
      }
      return { session, texts }
    })

  /** Promotes until nothing is pending; resolves with how many prompts this caller promoted. */
  const drain = (sessionID: Identifier.SessionID) =>
    Effect.gen(function* () {
      const inbox = yield* input
      let promoted = 0
      for (;;) {
        const steers = yield* inbox.promoteSteers(sessionID)
        const queued = yield* inbox.promoteNextQueued(sessionID)
        promoted += steers + Number(queued)
        yield* Effect.yieldNow()
        if (steers === 0 && !queued && (yield* inbox.pending(sessionID)).length === 0) return promoted
      }
    })

  /** Every prompt was promoted exactly once: one prompted event, one user message, one promoted_seq each. */
  const promotedOnce = (sessionID: Identifier.SessionID, texts: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const prompted = (yield* (yield* EventLog.Service).read(sessionID)).filter(
        (event) => event.type === "session.next.prompted"
      )
      const ids = prompted.map((event) => (event.data as { messageID: string }).messageID)
      expect(ids).toHaveLength(texts.length)
      expect(new Set(ids).size).toBe(texts.length)
      expect([...(yield* userTexts(sessionID))].sort()).toEqual([...texts].sort())
      expect((yield* promotedSeqs(sessionID)).every((row) => row.promoted_seq !== null)).toBe(true)
    })

  it.scoped("concurrent promotions in one process never promote a prompt twice", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const { session, texts } = yield* fill(w)
        const counts = yield* Effect.all(
          Array.from({ length: 4 }, () => drain(session.id)),
          { concurrency: "unbounded" }
        )
        expect(counts.reduce((a, b) => a + b, 0)).toBe(texts.length)
        yield* promotedOnce(session.id, texts)
      })
    )
  )

  it.scoped("concurrent promotions from three processes on one database file never promote a prompt twice", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const { session, texts } = yield* fill(w)
        // Two more hosts in their own processes (better-sqlite3 is synchronous: hosts racing on one
        // file need their own threads), released at once together with this one.
        const children = Array.from({ length: 2 }, () =>
          childProcess.spawn(process.execPath, ["--import", "tsx", promoterScript, w.databaseFile, w.dir, session.id], {
            cwd: packageDir,
            stdio: ["pipe", "pipe", "pipe"]
          })
        )
        const run = children.map((child) => {
          let out = ""
          let err = ""
          let ready = () => {}
          const started = new Promise<void>((resolve) => (ready = resolve))
          child.stdout.on("data", (chunk) => {
            out += String(chunk)
            if (out.includes("ready\n")) ready()
          })
          child.stderr.on("data", (chunk) => (err += String(chunk)))
          const exited = new Promise<string>((resolve, reject) =>
            child.on("exit", (code) =>
              code === 0 ? resolve(out) : reject(new Error(`promoter exited ${code}: ${err}`))
            )
          )
          // A child that dies before it is ready fails the wait instead of hanging it.
          return { started: Promise.race([started, exited.then(() => {})]), exited }
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => children.forEach((child) => child.kill())))
        yield* Effect.promise(() => Promise.all(run.map((r) => r.started)))
        for (const child of children) child.stdin.write("go\n")
        // Give the children a head start: this process joins while they are promoting.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        const mine = yield* drain(session.id)
        const theirs = (yield* Effect.promise(() => Promise.all(run.map((r) => r.exited)))).map((out) =>
          Number(/promoted (\d+)/.exec(out)?.[1])
        )
        expect(mine + theirs.reduce((a, b) => a + b, 0)).toBe(texts.length)
        yield* promotedOnce(session.id, texts)
      })
    )
  )
})
