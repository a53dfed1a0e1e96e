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
 * (`tx_queue` of its connection in Linux's `/proc/net/tcp` or `/proc/net/tcp6`, found by the two
 * ports). It answers undefined where there is no such table (not Linux), for a socket that is not
 * connected, or once the connection is gone. Each call reads the tables anew, so their size grows with
 * the machine's connections: call it seldom (a stalled write, not every write).
 */
export const reader =
  (socket: net.Socket): (() => number | undefined) =>
  () => {
    const local = socket.localPort
    const remote = socket.remotePort
    if (local === undefined || remote === undefined) return undefined
    const ports = `:${hexPort(local)} `
    const peer = `:${hexPort(remote)} `
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
        if (fields[3] !== established || !`${fields[1]} `.endsWith(ports) || !`${fields[2]} `.endsWith(peer)) continue
        const queued = Number.parseInt(fields[4]?.split(":")[0] ?? "", 16)
        return Number.isNaN(queued) ? undefined : queued
      }
    }
    return undefined
  }

const tables = ["/proc/net/tcp", "/proc/net/tcp6"]

/** The kernel's code for an established connection (`TCP_ESTABLISHED`). */
const established = "01"

const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, "0")
