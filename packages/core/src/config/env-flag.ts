export * as EnvFlag from "./env-flag.js"

/** Whether an environment flag such as `OPENCODE_DISABLE_PROJECT_CONFIG` is on: `1` or `true`, any case. */
export const isOn = (value: string | undefined): boolean =>
  value !== undefined && ["1", "true"].includes(value.trim().toLowerCase())

/**
 * Experimental plan mode (upstream's `experimentalPlanMode`): `OPENCODE_EXPERIMENTAL_PLAN_MODE` is on,
 * or the umbrella `OPENCODE_EXPERIMENTAL` is. With it, the plan agent works towards a plan file, the
 * `plan_exit` and `plan_enter` tools are registered, and the plan and build reminders follow the
 * experimental conditions (see SessionReminders).
 */
export const experimentalPlanMode = (env: Readonly<Record<string, string | undefined>>): boolean =>
  isOn(env.OPENCODE_EXPERIMENTAL_PLAN_MODE) || isOn(env.OPENCODE_EXPERIMENTAL)
