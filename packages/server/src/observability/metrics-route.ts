export * as MetricsRoute from "./metrics-route.js"

import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Metric } from "effect"
import { PrometheusText } from "./prometheus-text.js"

/** Where the exposition is served. */
export const path = "/metrics"

/** Whether a request is a scrape of {@link path} (its query aside). */
export const isScrape = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.url === path || request.url.startsWith(`${path}?`)

/**
 * `GET /metrics`: the process's metrics (see `RuntimeMetrics` in core, and anything else in Effect's
 * metric registry) in the Prometheus text format, `200 text/plain; version=0.0.4`.
 *
 * An extension outside the OpenAPI contract: a raw route on the API's router, so the API-wide
 * middleware guards it exactly like every operation (a foreign `Origin` or a non-loopback `Host` on a
 * loopback bind is refused, Basic auth applies when a password is set: a scraper sends the same
 * credentials as any client). It is not an `HttpApi` endpoint because its body is not JSON and no
 * generated client needs it. The registry is process-wide: an embedded host serves the same totals.
 */
export const layer = HttpApiBuilder.Router.use((router) =>
  router.get(
    path,
    Effect.map(Metric.snapshot, (pairs) =>
      HttpServerResponse.text(PrometheusText.render(pairs), { contentType: PrometheusText.contentType })
    )
  )
)
