export * as PermissionPrompt from "./permission-prompt.js"

import type { PermissionRequest } from "@opencode-ai/schema"
import { Effect } from "effect"

/** The keys a person answers a permission question with. */
export const keys = "[y] once  [a] always  [n] no"

/**
 * Waits for one answer key on a terminal: `y` allows once, `a` allows always, `n` (or Escape)
 * refuses; other keys are ignored. The terminal is in raw mode only while waiting, so Ctrl-C arrives
 * as a key: it is turned back into SIGINT for the process (which interrupts the run). Interrupting the
 * wait (the request was answered elsewhere) restores the terminal and reads nothing more.
 */
export const read = (input: NodeJS.ReadStream): Effect.Effect<PermissionRequest.PermissionV2Reply> =>
  Effect.async<PermissionRequest.PermissionV2Reply>((resume) => {
    const wasRaw = input.isRaw
    let done = false
    const restore = () => {
      if (done) return
      done = true
      input.off("data", onData)
      input.setRawMode(wasRaw)
      input.pause()
    }
    function onData(chunk: Buffer | string) {
      for (const char of chunk.toString()) {
        if (char === "\u0003") {
          restore()
          process.kill(process.pid, "SIGINT")
          return
        }
        const key = char.toLowerCase()
        const reply =
          key === "y" ? "once" : key === "a" ? "always" : key === "n" || key === "\u001b" ? "reject" : undefined
        if (reply !== undefined) {
          restore()
          resume(Effect.succeed(reply))
          return
        }
      }
    }
    input.setRawMode(true)
    input.on("data", onData)
    input.resume()
    return Effect.sync(restore)
  })
