export * as ModelIdentity from "./model-identity.js"

/**
 * Model Identity: the line telling the model which model it runs on (seed 003 "Environment and
 * project reference templates": the first line of upstream's environment block, the model's API ID
 * and `<provider>/<API ID>`). Our wording.
 *
 * It is part of each Step's system text, right before the Instruction Baseline (whose first source
 * is the environment block), and NOT an Instruction Source in the baseline:
 * - it changes with every model switch, and a model switch keeps the InstructionCheckpoint (seed
 *   001). In the baseline, the line would stay wrong after a switch until an Instruction Update
 *   corrected it, and every compaction would re-render it; the model would read "you are X" and
 *   later "you are now Y" in its context;
 * - beside the agent prompt, which depends on the model family anyway, it costs no cache: a
 *   provider's prompt cache belongs to one model, so a request to another model never reuses the old
 *   prefix, and for one model (and agent) the system text stays byte-identical from Step to Step.
 */

/** The identity line of a model (`apiID` is what is sent to the provider). Pure. */
export const line = (model: { readonly providerID: string; readonly apiID: string }): string =>
  `You are running on the model ${model.apiID}; its exact model ID is ${model.providerID}/${model.apiID}.`
