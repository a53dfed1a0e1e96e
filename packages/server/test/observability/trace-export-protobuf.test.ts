import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import protobuf from "protobufjs"
import { afterEach, describe, expect, it } from "vitest"
import { TraceExport } from "../../src/observability/trace-export.js"

/**
 * The part of the OTLP trace schema (opentelemetry-proto, `ExportTraceServiceRequest`) this test
 * reads, with the published field numbers: enough for a real protobuf decoder to read the body.
 */
const schema = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10; Status status = 15; fixed32 flags = 16;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
`
const Request = protobuf.parse(schema).root.lookupType("otlp.ExportTraceServiceRequest")

const receivers: Array<http.Server> = []
afterEach(() => {
  for (const server of receivers.splice(0)) server.close()
})

/** A loopback OTLP/HTTP receiver keeping each POST's raw body. */
const receiver = () =>
  new Promise<{ url: string; received: Array<{ path: string; contentType?: string; body: Buffer }> }>((resolve) => {
    const received: Array<{ path: string; contentType?: string; body: Buffer }> = []
    const server = http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        received.push({
          path: request.url ?? "",
          ...(request.headers["content-type"] === undefined ? {} : { contentType: request.headers["content-type"] }),
          body: Buffer.concat(chunks)
        })
        response.writeHead(200, { "content-type": "application/x-protobuf" }).end()
      })
    })
    receivers.push(server)
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received })
    )
  })

describe("TraceExport.layer with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", () => {
  it("posts protobuf that the OTLP schema decodes, parent links and attributes intact, when the layer closes", async () => {
    const collector = await receiver()
    const traced = Effect.void.pipe(
      Effect.withSpan("ToolSettlement.settle", { attributes: { tool: "read" } }),
      Effect.withSpan("StepRunner.run", { attributes: { stepID: "msg_1" } })
    )
    await Effect.runPromise(
      traced.pipe(
        Effect.provide(
          TraceExport.layer({
            env: {
              OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
              OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
              OTEL_SERVICE_NAME: "proto-test"
            },
            serviceVersion: "9.9.9"
          })
        )
      )
    )
    expect(collector.received).toHaveLength(1)
    const [post] = collector.received
    expect(post!.path).toBe("/v1/traces")
    expect(post!.contentType).toBe("application/x-protobuf")
    const decoded = Request.toObject(Request.decode(post!.body), { longs: String, defaults: false }) as any
    const resource = decoded.resourceSpans[0]
    const resourceAttributes = Object.fromEntries(
      resource.resource.attributes.map((kv: any) => [kv.key, kv.value.stringValue])
    )
    expect(resourceAttributes).toMatchObject({ "service.name": "proto-test", "service.version": "9.9.9" })
    const spans: Array<any> = resource.scopeSpans.flatMap((scoped: any) => scoped.spans)
    const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString("hex")
    const step = spans.find((span) => span.name === "StepRunner.run")
    const tool = spans.find((span) => span.name === "ToolSettlement.settle")
    expect(hex(step.traceId)).toMatch(/^[0-9a-f]{32}$/)
    expect(hex(step.spanId)).toMatch(/^[0-9a-f]{16}$/)
    expect(hex(tool.traceId)).toBe(hex(step.traceId))
    expect(hex(tool.parentSpanId)).toBe(hex(step.spanId))
    expect(tool.attributes).toEqual([{ key: "tool", value: { stringValue: "read" } }])
    expect(BigInt(tool.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(tool.startTimeUnixNano))
    expect(step.status.code).toBe(1)
  })
})
