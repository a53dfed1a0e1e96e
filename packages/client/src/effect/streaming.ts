/**
 * The streaming runtime of the Effect client, imported as a namespace: `import * as Streaming`.
 * (No self-export line here: tsup's declaration bundler cannot handle a module that re-exports itself.)
 */
import * as Sse from "@effect/experimental/Sse"
import {
  HttpApi,
  type HttpApiGroup,
  HttpClient,
  HttpClientError,
  HttpClientRequest,
  type HttpClientResponse
} from "@effect/platform"
import { EventStream } from "@opencode-ai/protocol"
import { type SchemaAST as AST, Data, Effect, Option, Schema, Stream } from "effect"

/**
 * The server ended a stream with its failure frame (`effect/httpapi/stream/failure`), e.g. because
 * this consumer fell too far behind the live bus. `failure` is the frame's cause list.
 */
export class StreamFailure extends Data.TaggedError("StreamFailure")<{
  readonly message: string
  readonly failure: EventStream.Failure
}> {}

/** The request parts of one stream call, decoded (as for `HttpApiClient`). */
export interface Request {
  readonly path?: object | undefined
  readonly urlParams?: object | undefined
}

/**
 * Opens the SSE endpoint `group.name`. The endpoint's own schemas encode the request and decode the
 * response: `A` is its event type and `E` its failure type, as the generated facade states them.
 */
export type Open = <A, E>(group: string, name: string, request: Request) => Stream.Stream<A, E>

interface Compiled {
  readonly method: string
  readonly path: string
  readonly encodePath: Option.Option<(u: unknown) => Effect.Effect<unknown, unknown>>
  readonly encodeUrlParams: Option.Option<(u: unknown) => Effect.Effect<unknown, unknown>>
  readonly status: number
  readonly decodeFrame: (event: Sse.Event) => Effect.Effect<unknown, unknown>
  readonly errors: ReadonlyMap<number, Option.Option<(u: unknown) => Effect.Effect<unknown, unknown>>>
}

/**
 * The streaming half of the Effect client, over the `HttpClient` in the environment. `HttpApiClient`
 * reads whole bodies, so SSE endpoints (those with an `EventStream` annotation) go through the raw
 * client: the response body is decoded as text, split into events by `Sse.makeChannel`, and each
 * event is decoded with the endpoint's success schema.
 *
 * A stream is cold: each run sends one request. Before any event, a declared error status fails the
 * stream with the decoded error, any other status with an `HttpClientError` (`StatusCode`), a success
 * that is not `text/event-stream` with an `HttpClientError` (`Decode`). After that it yields the
 * decoded events until the server ends the body; it fails with `StreamFailure` on the server's
 * failure frame, a `ParseError` on an undecodable event, or an `HttpClientError` when the connection
 * breaks. Interrupting the consuming fiber closes the connection. It never reconnects.
 */
export const make = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, ApiError, ApiR>(
  api: HttpApi.HttpApi<Id, Groups, ApiError, ApiR>,
  options: { readonly baseUrl: string | URL }
): Effect.Effect<Open, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (httpClient) => {
    const client = httpClient.pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl(options.baseUrl.toString())))
    const endpoints = new Map<string, Compiled>()
    HttpApi.reflect(api as unknown as HttpApi.HttpApi<string, HttpApiGroup.HttpApiGroup.Any, unknown, unknown>, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, errors, group, successes }) => {
        const declaration = EventStream.declarationOf(endpoint)
        if (declaration === undefined) return
        const [success] = [...successes]
        if (success === undefined || Option.isNone(success[1].ast)) return
        const event = Schema.make<unknown, unknown, never>(success[1].ast.value)
        const decodeFrame =
          declaration.framing === "frames"
            ? (() => {
                const decode = Schema.decodeUnknown(event)
                return (frame: Sse.Event) =>
                  Effect.map(
                    decode({ id: frame.id, event: frame.event, data: frame.data }),
                    (decoded) => (decoded as { readonly data: unknown }).data
                  )
              })()
            : (() => {
                const decode = Schema.decodeUnknown(Schema.parseJson(event))
                return (frame: Sse.Event) => decode(frame.data)
              })()
        endpoints.set(`${group.identifier}.${endpoint.name}`, {
          method: endpoint.method,
          path: endpoint.path,
          encodePath: Option.map(endpoint.pathSchema, (schema) =>
            Schema.encodeUnknown(schema as unknown as Schema.Schema<unknown, unknown>)
          ),
          encodeUrlParams: Option.map(endpoint.urlParamsSchema, (schema) =>
            Schema.encodeUnknown(schema as unknown as Schema.Schema<unknown, unknown>)
          ),
          status: success[0],
          decodeFrame,
          errors: new Map(
            [...errors].map(([status, { ast }]) => [
              status,
              Option.map(ast, (ast: AST.AST) => Schema.decodeUnknown(Schema.make<unknown, unknown, never>(ast)))
            ])
          )
        })
      }
    })

    const open = (group: string, name: string, request: Request): Stream.Stream<unknown, unknown> => {
      const compiled = endpoints.get(`${group}.${name}`)
      if (compiled === undefined) return Stream.dieMessage(`${group}.${name} is not an event stream endpoint`)
      return Stream.unwrap(
        Effect.gen(function* () {
          const path = Option.isSome(compiled.encodePath)
            ? ((yield* compiled.encodePath.value(request.path ?? {})) as Record<string, string>)
            : {}
          const url = compiled.path.replace(/:(\w+)\??/g, (_, name: string) => encodeURIComponent(String(path[name])))
          let httpRequest = HttpClientRequest.make(compiled.method as "GET")(url).pipe(
            HttpClientRequest.accept(EventStream.contentType)
          )
          if (Option.isSome(compiled.encodeUrlParams)) {
            const params = (yield* compiled.encodeUrlParams.value(request.urlParams ?? {})) as Record<
              string,
              string | undefined
            >
            httpRequest = HttpClientRequest.appendUrlParams(httpRequest, definedOnly(params))
          }
          const response = yield* client.execute(httpRequest)
          if (response.status !== compiled.status) return yield* failure(compiled, response)
          const contentType = response.headers["content-type"] ?? ""
          if (!/^text\/event-stream\s*(?:;|$)/i.test(contentType.trim())) {
            return yield* new HttpClientError.ResponseError({
              request: httpRequest,
              response,
              reason: "Decode",
              description: `expected a text/event-stream response, got ${contentType === "" ? "no content type" : contentType}`
            })
          }
          return response.stream.pipe(
            Stream.decodeText(),
            Stream.pipeThroughChannel(Sse.makeChannel()),
            Stream.mapEffect((frame) =>
              frame.event === EventStream.failureEvent ? streamFailure(frame) : compiled.decodeFrame(frame)
            )
          )
        })
      )
    }
    return open as Open
  })

const definedOnly = (params: Record<string, string | undefined>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(params)) if (value !== undefined) out[key] = value
  return out
}

/** A non-success status: the declared error of that status (decoded from its JSON body), else StatusCode. */
const failure = (compiled: Compiled, response: HttpClientResponse.HttpClientResponse) =>
  Effect.gen(function* () {
    const decode = compiled.errors.get(response.status)
    if (decode === undefined || Option.isNone(decode)) {
      return yield* new HttpClientError.ResponseError({ request: response.request, response, reason: "StatusCode" })
    }
    const error = yield* Effect.flatMap(response.json, decode.value)
    return yield* Effect.fail(error)
  })

const decodeFailure = Schema.decodeUnknown(Schema.parseJson(EventStream.Failure))

const streamFailure = (frame: Sse.Event) =>
  Effect.flatMap(decodeFailure(frame.data), (failure) => {
    const die = failure.find((entry) => entry._tag === "Die")
    const defect = die?._tag === "Die" ? (die.defect as { readonly message?: unknown } | null) : null
    const message = typeof defect?.message === "string" ? defect.message : "the server ended the stream with a failure"
    return Effect.fail(new StreamFailure({ message, failure }))
  })
