import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { TraceExport } from "../../src/observability/trace-export.js"

describe("TraceExport.fromEnv", () => {
  it("exports nothing without an endpoint, or when the SDK or the traces exporter is off", () => {
    expect(TraceExport.fromEnv({})).toEqual(Option.none())
    expect(TraceExport.fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toEqual(Option.none())
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
    expect(TraceExport.fromEnv({ ...endpoint, OTEL_SDK_DISABLED: "TRUE" })).toEqual(Option.none())
    expect(TraceExport.fromEnv({ ...endpoint, OTEL_TRACES_EXPORTER: "none" })).toEqual(Option.none())
    expect(Option.isSome(TraceExport.fromEnv({ ...endpoint, OTEL_SDK_DISABLED: "false" }))).toBe(true)
  })

  it("appends /v1/traces to the base endpoint and uses a traces endpoint as it is", () => {
    const url = (env: Record<string, string>) => Option.getOrThrow(TraceExport.fromEnv(env)).url
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe("http://127.0.0.1:4318/v1/traces")
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector/otlp/" })).toBe("http://collector/otlp/v1/traces")
    expect(
      url({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://base", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://other/spans" })
    ).toBe("http://other/spans")
  })

  it("reads headers (percent-decoded, the traces-specific ones winning), the protocol and the service name", () => {
    const settings = Option.getOrThrow(
      TraceExport.fromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-tenant = t1,broken,=nokey,x-raw=100%",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-tenant=t2",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_RESOURCE_ATTRIBUTES: "service.name=from-resource,deployment.environment=test"
      })
    )
    expect(settings).toEqual({
      url: "http://127.0.0.1:4318/v1/traces",
      headers: { authorization: "Bearer abc", "x-tenant": "t2", "x-raw": "100%" },
      protocol: "http/protobuf",
      serviceName: "from-resource",
      attributes: { "deployment.environment": "test" }
    })
    const named = (env: Record<string, string>) =>
      Option.getOrThrow(TraceExport.fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", ...env }))
    expect(named({}).serviceName).toBe("opencode")
    expect(named({}).protocol).toBe("http/json")
    expect(named({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }).protocol).toBe("http/json")
    expect(
      named({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" }).protocol
    ).toBe("http/json")
    expect(named({ OTEL_SERVICE_NAME: "mine", OTEL_RESOURCE_ATTRIBUTES: "service.name=theirs" }).serviceName).toBe(
      "mine"
    )
  })
})
