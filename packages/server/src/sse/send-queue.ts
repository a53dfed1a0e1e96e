export * as SendQueue from "./send-queue.js"

import * as fs from "node:fs"
import type * as net from "node:net"

/*
 * Why a write watchdog needs this. A socket's `drain` is the only progress Node reports, and it comes
 * in steps the kernel sets, not the reader: once a TCP send buffer is full, Linux wakes the writer
 * only when a third of it is free again. On loopback that buffer grows to 4 MiB, so a client reading
 * a long replay at 1 MB/s drains the server's response about every 1.3 s (measured gaps up to 3 s),
 * and one reading under 45 KB/s would pass a whole 30 s write timeout between two drains while it
 * reads all along. The kernel's send queue, though, shrinks with every byte the client's side
 * acknowledges.
 */

/**
 * A reader of `socket`'s send queue: the bytes it has written that the peer has not acknowledged yet
 * (`tx_queue` of its connection in Linux's `/proc/net/tcp` or `/proc/net/tcp6`, found by its two
 * ports alone: two connections with the same two ports on other addresses are not told apart). It
 * answers undefined where there is no such table (not Linux), for a socket that is not connected, or
 * once the connection is gone. The tables grow with the machine's connections, so one read of them
 * serves every reader for {@link reuseMs}: many streams waiting at once cost one read per interval,
 * not one each.
 */
export const reader =
  (socket: net.Socket): (() => number | undefined) =>
  () => {
    const local = socket.localPort
    const remote = socket.remotePort
    return local === undefined || remote === undefined ? undefined : queues().get(key(local, remote))
  }

/** How long one read of the tables is used for: well under a watchdog's look interval. */
export const reuseMs = 50

const tables = ["/proc/net/tcp", "/proc/net/tcp6"]

/** The kernel's code for an established connection (`TCP_ESTABLISHED`). */
const established = "01"

const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, "0")

const key = (local: number, remote: number) => `${hexPort(local)}:${hexPort(remote)}`

let read: { readonly at: number; readonly queues: ReadonlyMap<string, number> } | undefined

/** The send queue of every established connection, by {@link key}, as of at most {@link reuseMs} ago. */
const queues = (): ReadonlyMap<string, number> => {
  const now = performance.now()
  if (read !== undefined && now - read.at < reuseMs) return read.queues
  const found = new Map<string, number>()
  for (const table of tables) {
    let text: string
    try {
      text = fs.readFileSync(table, "latin1")
    } catch {
      continue
    }
    for (const line of text.split("\n")) {
      // "  sl  local_address rem_address   st tx_queue:rx_queue …", addresses as HEX:PORT.
      const fields = line.trim().split(/\s+/, 5)
      if (fields[3] !== established) continue
      const local = fields[1]!.slice(fields[1]!.lastIndexOf(":") + 1)
      const remote = fields[2]!.slice(fields[2]!.lastIndexOf(":") + 1)
      const queued = Number.parseInt(fields[4]?.split(":")[0] ?? "", 16)
      if (!Number.isNaN(queued)) found.set(`${local}:${remote}`, queued)
    }
  }
  read = { at: now, queues: found }
  return found
}
