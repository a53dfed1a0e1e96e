export * as EnvFlag from "./env-flag.js"

/** Whether an environment flag such as `OPENCODE_DISABLE_PROJECT_CONFIG` is on: `1` or `true`, any case. */
export const isOn = (value: string | undefined): boolean =>
  value !== undefined && ["1", "true"].includes(value.trim().toLowerCase())
