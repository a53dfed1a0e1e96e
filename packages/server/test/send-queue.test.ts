import * as fs from "node:fs"
import * as net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SendQueue } from "../src/sse/send-queue.js"

/** A loopback connection: `sender` is the server's side, `receiver` the client's, paused. */
const connection = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ readonly sender: net.Socket; readonly receiver: net.Socket; readonly server: net.Server }>(
        (resolve) => {
          const server = net.createServer((sender) => resolve({ sender, receiver, server }))
          let receiver: net.Socket
          server.listen(0, "127.0.0.1", () => {
            receiver = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1")
            receiver.pause()
          })
        }
      )
  ),
  ({ receiver, sender, server }) =>
    Effect.sync(() => {
      receiver.destroy()
      sender.destroy()
      server.close()
    })
)

const until = (condition: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500 && !condition(); i++) yield* Effect.sleep("10 millis")
    return condition()
  })

describe.runIf(fs.existsSync("/proc/net/tcp"))("SendQueue.reader", () => {
  it.scopedLive(
    "reads what the peer has not acknowledged: it grows while the peer does not read, and shrinks as it does",
    () =>
      Effect.gen(function* () {
        const { sender, receiver } = yield* connection
        const queued = SendQueue.reader(sender)
        expect(queued()).toBe(0)
        // Far more than the receiver's buffer holds while it does not read.
        sender.write(Buffer.alloc(16 * 1024 * 1024))
        expect(yield* until(() => (queued() ?? 0) > 1024 * 1024)).toBe(true)
        const stuck = queued()!
        receiver.resume()
        expect(yield* until(() => (queued() ?? stuck) < stuck)).toBe(true)
        expect(yield* until(() => queued() === 0)).toBe(true)
        // Gone: no such connection any more.
        sender.destroy()
        expect(yield* until(() => queued() === undefined)).toBe(true)
      })
  )

  it.scopedLive("a socket that is not connected has no queue", () =>
    Effect.sync(() => {
      expect(SendQueue.reader(new net.Socket())()).toBeUndefined()
    })
  )
})
