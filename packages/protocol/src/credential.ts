export * as CredentialGroup from "./credential.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/** A stored credential's ID: the provider ID it is stored under. */
export const CredentialPath = Schema.Struct({ credentialID: Schema.String })

export const UpdatePayload = Schema.Struct({ label: Schema.String }).annotations(strict)

/** `PATCH /api/credential/{credentialID}`: renames a stored credential. */
export const update = HttpApiEndpoint.patch("update", "/api/credential/:credentialID")
  .setPath(CredentialPath)
  .setUrlParams(LocationQuery)
  .setPayload(UpdatePayload)
  .addSuccess(Schema.Void, { status: 204 })
  .annotate(OpenApi.Identifier, "v2.credential.update")
  .annotate(OpenApi.Summary, "Rename a credential")
  .annotate(
    OpenApi.Description,
    "Sets the label of a stored credential (its secret is unchanged). An unknown credential or an empty label is an InvalidRequestError."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `DELETE /api/credential/{credentialID}`: deletes a stored credential. */
export const remove = HttpApiEndpoint.del("remove", "/api/credential/:credentialID")
  .setPath(CredentialPath)
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Void, { status: 204 })
  .annotate(OpenApi.Identifier, "v2.credential.remove")
  .annotate(OpenApi.Summary, "Remove a credential")
  .annotate(
    OpenApi.Description,
    "Deletes a stored credential from the credentials file; its provider leaves the catalog unless the config or an environment variable still offers it. An unknown credential is an InvalidRequestError."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("credentials")
  .add(update)
  .add(remove)
  .annotate(OpenApi.Title, "opencode HttpApi")
  .annotate(ClientProjection.Namespace, "credentials")
