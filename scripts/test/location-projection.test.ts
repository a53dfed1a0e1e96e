import * as fs from "node:fs"
import * as path from "node:path"
import { type HttpApi, OpenApi } from "@effect/platform"
import { describe, expect, it } from "vitest"
import { Api, Middleware, OpenApiDocument } from "../../packages/protocol/src/index.js"
import { ServerApi } from "../../packages/server/src/api.js"
import { LocationMiddleware } from "../../packages/server/src/middleware/location.js"
import { Generate } from "../codegen/generate.js"
import { SdkContract } from "../codegen/ir.js"

/**
 * Generated equivalence of the two builds of Protocol's API: the server's authoritative one (its
 * concrete Location key) and the clients' projection (the transport-only key). Codegen reflects the
 * projection; these tests prove that reflecting the server's API instead would generate the same files.
 */

const committed = (file: string) => fs.readFileSync(path.join(Generate.root, file), "utf8")

/** `group.endpoint` of every endpoint carrying `key`, in declaration order. */
const carrying = (api: HttpApi.HttpApi.Any, key: unknown): ReadonlyArray<string> =>
  Object.values((api as HttpApi.HttpApi.AnyWithProps).groups).flatMap((group) =>
    Object.values(group.endpoints)
      .filter((endpoint) => endpoint.middlewares.has(key as never))
      .map((endpoint) => `${group.identifier}.${endpoint.name}`)
  )

describe("the server's concrete API and the clients' transport-only projection", () => {
  it("reflect to the same SDK Contract IR, which is the committed packages/client/sdk-contract.json", () => {
    const server = SdkContract.serialize(SdkContract.fromApi(ServerApi.api))
    const client = SdkContract.serialize(SdkContract.fromApi(Api.OpenCodeApi))
    expect(server).toBe(client)
    expect(server).toBe(committed(Generate.contractPath))
  })

  it("document the same OpenAPI, which is the committed packages/protocol/openapi.json", () => {
    const server = `${JSON.stringify(OpenApi.fromApi(ServerApi.api), null, 2)}\n`
    expect(server).toBe(OpenApiDocument.render())
    expect(server).toBe(committed(Generate.openApiPath))
  })

  it("place their Location keys on the same endpoints: exactly those that take the location query", () => {
    const server = carrying(ServerApi.api, LocationMiddleware.Key)
    const client = carrying(Api.OpenCodeApi, Middleware.LocationTransport)
    expect(server).toEqual(client)
    // neither key leaks into the other build
    expect(carrying(ServerApi.api, Middleware.LocationTransport)).toEqual([])
    expect(carrying(Api.OpenCodeApi, LocationMiddleware.Key)).toEqual([])
    // the documented `location` query parameter (deepObject, or its bracketed keys) marks exactly the same operations
    const document = OpenApi.fromApi(Api.OpenCodeApi) as unknown as {
      readonly paths: Record<
        string,
        Record<
          string,
          {
            readonly operationId: string
            readonly parameters?: ReadonlyArray<{ readonly name: string; readonly in: string }>
          }
        >
      >
    }
    const documented = Object.values(document.paths)
      .flatMap((methods) => Object.values(methods))
      .filter((op) =>
        (op.parameters ?? []).some((p) => p.in === "query" && (p.name === "location" || p.name.startsWith("location[")))
      )
      .map((op) => op.operationId)
      .sort()
    const contract = SdkContract.fromApi(Api.OpenCodeApi)
    const placed = contract.operations
      .filter((o) => client.includes(`${o.group}.${o.name}`))
      .map((o) => o.operationId)
      .sort()
    expect(placed).toEqual(documented)
    expect(client).toContain("location.get")
    expect(client).toContain("pty.connect")
    // a Location in the body, or none at all, is not the query: the handler resolves it itself
    expect(client).not.toContain("sessions.create")
    expect(client).not.toContain("events.subscribe")
  })
})
