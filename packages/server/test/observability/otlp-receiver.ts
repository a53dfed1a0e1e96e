import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly path: string
  readonly contentType: string | undefined
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

export interface Receiver {
  readonly url: string
  /** Every POST so far, its JSON body decoded. */
  readonly received: Array<Received>
  readonly close: () => void
}

/** A loopback OTLP/HTTP (JSON) receiver: it keeps every POST, its body decoded, and answers `{}`. */
export const start = () =>
  new Promise<Receiver>((resolve) => {
    const received: Array<Received> = []
    const server = http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        received.push({
          path: request.url ?? "",
          contentType: request.headers["content-type"],
          headers: request.headers,
          body: JSON.parse(Buffer.concat(chunks).toString("utf8"))
        })
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        received,
        close: () => server.close()
      })
    )
  })

/** An OTLP attribute list as a plain record (string, int, double and bool values). */
export const attributes = (list: ReadonlyArray<{ key: string; value: Record<string, unknown> }> = []) =>
  Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue ?? JSON.stringify(value)
    ])
  )

/** Every span of every received trace export. */
export const spans = (received: ReadonlyArray<Received>): Array<any> =>
  received
    .filter((r) => r.path === "/v1/traces")
    .flatMap((r) => r.body.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)))
