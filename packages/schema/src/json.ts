export * as Json from "./json.js"

import { Schema } from "effect"

/** A plain JSON value: null, a boolean, a finite number, a string, or an array or object of those. */
export type Value = null | boolean | number | string | ReadonlyArray<Value> | { readonly [key: string]: Value }

export const Value: Schema.Schema<Value> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Finite,
  Schema.String,
  Schema.Array(Schema.suspend((): Schema.Schema<Value> => Value)),
  Schema.Record({ key: Schema.String, value: Schema.suspend((): Schema.Schema<Value> => Value) })
).annotations({ identifier: "JsonValue" })

/** A JSON object: string keys to JSON values. */
export const JsonObject = Schema.Record({ key: Schema.String, value: Value })
export type JsonObject = typeof JsonObject.Type
