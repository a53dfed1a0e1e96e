export * as TraceExport from "./trace-export.js"

/**
 * Trace Export: the spans the runtime makes (every `Traced.fn` operation, which makes its span once
 * a tracer like this one is installed, every `Effect.withSpan`, the HTTP server's and client's, the
 * SQL client's) sent to an OpenTelemetry collector over OTLP/HTTP, when the standard environment asks
 * for it. Nothing is installed otherwise: without an endpoint the
 * process keeps Effect's default in-memory tracer, exactly as before.
 *
 * The span tree of a session's work (see `SessionExecution`, `StepRunner`, `ToolSettlement`):
 * ```
 * SessionExecution.run          sessionID; the root of its own trace, linked to the request that woke it
 * └─ StepRunner.run             one Step: sessionID, stepID (its assistant message), agent, providerID, modelID
 *    └─ StepRunner.attempt      the provider call (its retries included)
 *       ├─ OpenAICompatible.stream / Anthropic.stream / Gemini.stream   one HTTP request each
 *       └─ ToolSettlement.settle                                        each tool call: tool, callID
 * ```
 *
 * Spans are batched in memory and posted every 5 s (or at 1000 spans); closing the layer (server
 * shutdown) posts what is left, waiting at most 3 s. A collector that cannot be reached drops the
 * batch and pauses export for a minute (a DEBUG log line says so); it never affects requests.
 */

import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient } from "@effect/platform"
import { Layer, Option } from "effect"

/** Where and how spans are sent, from the environment ({@link fromEnv}). */
export interface Settings {
  /** The full URL spans are posted to, e.g. `http://127.0.0.1:4318/v1/traces`. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: "http/json" | "http/protobuf"
  readonly serviceName: string
  /** `OTEL_RESOURCE_ATTRIBUTES`, less `service.name` (which is {@link Settings.serviceName}). */
  readonly attributes: Readonly<Record<string, string>>
}

/** The `service.name` used when the environment names none. */
export const defaultServiceName = "opencode"

/**
 * `key=value` pairs separated by commas, values percent-decoded (the format of
 * `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`). A pair without `=` or with an empty
 * key is skipped; a value that is not valid percent-encoding is kept as written.
 */
export const parsePairs = (text: string | undefined): Record<string, string> => {
  const pairs: Record<string, string> = {}
  for (const item of (text ?? "").split(",")) {
    const at = item.indexOf("=")
    if (at <= 0) continue
    const key = item.slice(0, at).trim()
    if (key === "") continue
    const raw = item.slice(at + 1).trim()
    let value = raw
    try {
      value = decodeURIComponent(raw)
    } catch {
      // Not percent-encoding: the value as written.
    }
    pairs[key] = value
  }
  return pairs
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value.trim()

/**
 * The export settings the standard OpenTelemetry variables ask for, or `None`:
 * - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is; otherwise `OTEL_EXPORTER_OTLP_ENDPOINT`
 *   with `/v1/traces` appended. Neither set: `None`.
 * - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: `None`.
 * - Headers from `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (which wins).
 * - `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`, else
 *   `http/json` (the default here; `grpc` is not supported and also means `http/json`).
 * - `OTEL_SERVICE_NAME`; else `service.name` from `OTEL_RESOURCE_ATTRIBUTES`; else `opencode`.
 */
export const fromEnv = (env: Record<string, string | undefined>): Option.Option<Settings> => {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return Option.none()
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return Option.none()
  const signal = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  const base = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT)
  const url = signal ?? (base === undefined ? undefined : `${base.replace(/\/+$/, "")}/v1/traces`)
  if (url === undefined) return Option.none()
  const protocol = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL)
  const { "service.name": resourceName, ...attributes } = parsePairs(env.OTEL_RESOURCE_ATTRIBUTES)
  return Option.some({
    url,
    headers: { ...parsePairs(env.OTEL_EXPORTER_OTLP_HEADERS), ...parsePairs(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    protocol: protocol === "http/protobuf" ? "http/protobuf" : "http/json",
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? nonEmpty(resourceName) ?? defaultServiceName,
    attributes
  })
}

/**
 * Installs the OTLP tracer when {@link fromEnv} finds settings, else nothing (`Layer.empty`). Provide
 * it underneath everything that should be traced, so that it is released last and its final export
 * sees the spans that ended during shutdown.
 */
export const layer = (options: {
  readonly env: Record<string, string | undefined>
  readonly serviceVersion: string
}): Layer.Layer<never> =>
  Option.match(fromEnv(options.env), {
    onNone: () => Layer.empty,
    onSome: (settings) =>
      OtlpTracer.layer({
        url: settings.url,
        headers: settings.headers,
        resource: {
          serviceName: settings.serviceName,
          serviceVersion: options.serviceVersion,
          attributes: settings.attributes
        }
      }).pipe(
        Layer.provide(
          settings.protocol === "http/protobuf" ? OtlpSerialization.layerProtobuf : OtlpSerialization.layerJson
        ),
        Layer.provide(FetchHttpClient.layer)
      )
  })
