import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** One request as the loopback server received it. */
export interface Received {
  readonly method: string
  /** The request URL, resolved against the server's origin (query decoded by `searchParams`). */
  readonly url: URL
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** A scripted reply. `hang: true` never answers (for cancellation tests). */
export interface Reply {
  readonly status?: number
  readonly contentType?: string
  readonly body?: string
  readonly hang?: boolean
}

export interface Loopback {
  readonly baseUrl: string
  readonly received: Array<Received>
  /** Replaces the reply script for the following requests. */
  reply(script: (request: Received) => Reply): void
  close(): Promise<void>
}

/** JSON reply helper. */
export const json = (status: number, value: unknown): Reply => ({
  status,
  contentType: "application/json",
  body: JSON.stringify(value)
})

/** A real `node:http` server on 127.0.0.1 with an ephemeral port, answering from a replaceable script. */
export const start = async (): Promise<Loopback> => {
  let script: (request: Received) => Reply = () => ({ status: 500, body: "no script" })
  const received: Array<Received> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const request: Received = {
        method: req.method ?? "",
        url: new URL(req.url ?? "/", "http://127.0.0.1"),
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8")
      }
      received.push(request)
      const reply = script(request)
      if (reply.hang === true) return
      res.writeHead(reply.status ?? 200, reply.contentType === undefined ? {} : { "content-type": reply.contentType })
      res.end(reply.body ?? "")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    received,
    reply: (next) => {
      script = next
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error === undefined ? resolve() : reject(error)))
      })
  }
}

/** A loopback URL on which nothing listens: a port that was just bound and released. */
export const refusedUrl = async (): Promise<string> => {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return `http://127.0.0.1:${port}`
}

/** A session record as the server encodes it. */
export const sessionJson = (id: string) => ({
  id,
  projectID: "prj_1",
  cost: 0,
  tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
  time: { created: 1, updated: 2 },
  title: "New session",
  location: { directory: "/work" }
})
