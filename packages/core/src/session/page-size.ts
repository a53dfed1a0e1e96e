export * as PageSize from "./page-size.js"

import { Errors } from "@opencode-ai/schema"
import { Effect } from "effect"

/** The page size when a first page does not say. */
export const defaultLimit = 50

/**
 * A page's `limit`, checked: an integer from 1 to 200, else an InvalidRequestError on the `limit`
 * query field. A first page and a continuation check it alike (a continuation may repeat or change it).
 */
export const check = (limit: number): Effect.Effect<number, Errors.InvalidRequestError> =>
  Number.isInteger(limit) && limit >= 1 && limit <= 200
    ? Effect.succeed(limit)
    : Effect.fail(
        new Errors.InvalidRequestError({
          kind: "query",
          field: "limit",
          message: "limit must be an integer from 1 to 200"
        })
      )
