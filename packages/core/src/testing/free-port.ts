export * as FreePort from "./free-port.js"

import * as net from "node:net"

/**
 * A loopback TCP port nothing listens on now (the system picks it; it is closed again at once), for a
 * process that must be told its port before it listens, e.g. a runner's `--runner-address`. Another
 * process may take it in between: a test then fails to start, it never shares a port.
 */
export const loopback = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
