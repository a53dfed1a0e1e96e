export * as Endpoint from "./endpoint.js"

import type { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpClientError } from "@effect/platform"
import type { Api } from "@opencode-ai/protocol"
import type { Cursor } from "@opencode-ai/schema"
import type { ParseResult } from "effect"
import type * as Streaming from "./streaming.js"

/**
 * Type-level views of one endpoint of `Api.OpenCodeApi`, addressed by group and endpoint name. The
 * generated facade states its signatures with these, so every input and output type is the decoded
 * type Protocol declares (brands and transformations included) rather than a copy of it.
 */
type OpenCodeApi = typeof Api.OpenCodeApi
type Groups = OpenCodeApi extends HttpApi.HttpApi<string, infer G, infer _E, infer _R> ? G : never
type ApiError = OpenCodeApi extends HttpApi.HttpApi<string, infer _G, infer E, infer _R> ? E : never

/** The endpoint `Name` of group `Group`. */
export type Of<Group extends string, Name extends string> = HttpApiEndpoint.HttpApiEndpoint.WithName<
  HttpApiGroup.HttpApiGroup.EndpointsWithName<Groups, Group>,
  Name
>

/** The decoded path parameters. */
export type Path<Group extends string, Name extends string> = HttpApiEndpoint.HttpApiEndpoint.PathParsed<
  Of<Group, Name>
>

/** The decoded query parameters. */
export type UrlParams<Group extends string, Name extends string> = HttpApiEndpoint.HttpApiEndpoint.UrlParams<
  Of<Group, Name>
>

/** The decoded payload (the body fields). */
export type Payload<Group extends string, Name extends string> = HttpApiEndpoint.HttpApiEndpoint.Payload<
  Of<Group, Name>
>

/** The decoded success value, before any envelope is unwrapped. */
export type Success<Group extends string, Name extends string> = HttpApiEndpoint.HttpApiEndpoint.Success<
  Of<Group, Name>
>

/**
 * Everything a call can fail with: the endpoint's, its group's and the API's declared failures
 * (decoded tagged errors), a transport or unexpected-status `HttpClientError`, or a `ParseError` when a
 * request cannot be encoded or a response cannot be decoded.
 */
export type Failure<Group extends string, Name extends string> =
  | HttpApiEndpoint.HttpApiEndpoint.Error<Of<Group, Name>>
  | HttpApiGroup.HttpApiGroup.ErrorWithName<Groups, Group>
  | ApiError
  | HttpClientError.HttpClientError
  | ParseResult.ParseError

/**
 * Everything an event stream can fail with: {@link Failure} (before the first event: a declared error
 * status, a transport or unexpected-status error; later: a broken connection or an undecodable event)
 * plus the server's own failure frame.
 */
export type StreamFailure<Group extends string, Name extends string> = Failure<Group, Name> | Streaming.StreamFailure

/** The input of an operation that takes none. */
export type NoInput = Readonly<Record<string, never>>

/** The defined members `names` of `input`: splits one merged input into path, query and body parts. */
export const pick = <A extends object, K extends keyof A>(input: A, names: ReadonlyArray<K>): Pick<A, K> => {
  const out = {} as Pick<A, K>
  for (const name of names) if (input[name] !== undefined) out[name] = input[name]
  return out
}

/** The decoded item of a paged endpoint's list envelope (`{data: Item[], cursor}`). */
export type PageItem<Group extends string, Name extends string> =
  Success<Group, Name> extends { readonly data: ReadonlyArray<infer Item> } ? Item : never

/** The initial query of a paged endpoint: every query parameter but the cursor. */
export type PageQuery<Group extends string, Name extends string> = Omit<UrlParams<Group, Name>, "cursor"> & {
  readonly cursor?: undefined
}

/**
 * A continuation of a paged endpoint: a page's link as `cursor`, optionally with the continuation
 * parameters `Continue`; the query's other parameters are carried by the cursor and typed `undefined` here.
 */
export type PageContinuation<
  Group extends string,
  Name extends string,
  Continue extends keyof UrlParams<Group, Name>
> = { readonly cursor: Cursor.Token } & Pick<UrlParams<Group, Name>, Continue> & {
    readonly [K in Exclude<keyof UrlParams<Group, Name>, Continue | "cursor">]?: undefined
  }
