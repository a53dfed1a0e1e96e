export * as PtySocket from "./pty-socket.js"

import { Socket } from "@effect/platform"
import type { Ptys } from "@opencode-ai/core"
import { Effect, Either, Stream } from "effect"

/*
 * One WebSocket connection to a PTY (`GET /api/pty/{ptyID}/connect`, after the upgrade):
 *
 *   server ─► replay text frames (≤ 64 KiB each) ─► meta frame ─► live output text frames ─► close
 *   client ─► text or binary (UTF-8) frames, typed into the terminal as they come
 *
 * The meta frame is a binary frame: one 0x00 byte, then the UTF-8 JSON `{"cursor": N}`, N being
 * the offset of the end of the replay (where the live output starts): a client that reconnects
 * with `?cursor=N` (plus what it has received since) misses nothing and sees nothing twice.
 *
 * The server closes with 1000 when the program exits or the PTY is removed, and with 1013 when the
 * client fell too far behind the output (it may reconnect from its cursor). A binary frame that is
 * not valid UTF-8 is ignored.
 */

/** The largest replay frame, in UTF-16 code units. */
export const replayChunk = 64 * 1024

/** `text` in frames of at most {@link replayChunk} code units, never splitting a surrogate pair. */
export const chunks = (text: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  let at = 0
  while (at < text.length) {
    let end = Math.min(at + replayChunk, text.length)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1
    out.push(text.slice(at, end))
    at = end
  }
  return out
}

const encoder = new TextEncoder()

/** The meta frame: 0x00, then `{"cursor": cursor}` in UTF-8. */
export const metaFrame = (cursor: number): Uint8Array => {
  const json = encoder.encode(JSON.stringify({ cursor }))
  const frame = new Uint8Array(json.length + 1)
  frame.set(json, 1)
  return frame
}

const decoder = new TextDecoder("utf-8", { fatal: true })

/** A client frame as terminal input; `undefined` for a binary frame that is not UTF-8. */
export const decodeInput = (data: string | Uint8Array): string | undefined => {
  if (typeof data === "string") return data
  try {
    return decoder.decode(data)
  } catch {
    return undefined
  }
}

/**
 * Runs the connection until either side ends it: the client closes, the PTY's output ends (then the
 * socket is closed with 1000), or the client falls behind (1013). Never fails; interruption closes
 * the socket.
 */
export const serve = (socket: Socket.Socket, attachment: Ptys.Attachment): Effect.Effect<void> =>
  Effect.scoped(
    Effect.gen(function* () {
      const write = yield* socket.writer
      // Writes wait until the socket is open, so the output can start before `runRaw` has opened it.
      const outbound = Effect.gen(function* () {
        for (const chunk of chunks(attachment.replay)) yield* write(chunk)
        yield* write(metaFrame(attachment.cursor))
        const outcome = yield* attachment.output.pipe(Stream.runForEach(write), Effect.either)
        yield* write(
          Either.isLeft(outcome) && outcome.left._tag === "Core/Pty/SlowConsumer"
            ? new Socket.CloseEvent(1013, "fell behind the output: reconnect with your cursor")
            : new Socket.CloseEvent(1000, "the PTY ended")
        )
      })
      yield* Effect.forkScoped(outbound)
      yield* socket.runRaw((data) => {
        const input = decodeInput(data)
        if (input !== undefined) attachment.write(input)
      })
    })
  ).pipe(Effect.catchAll(() => Effect.void))
