export * as ProviderPackage from "./provider-package.js"

/**
 * What a provider's `npm` package means to this runtime: the one table from package name to wire
 * protocol (no AI SDK package is installed; the name only selects how we speak). Each entry either
 * speaks a protocol, with the vendor's public base URL when the package implies one, or says why the
 * runtime cannot reach that kind of provider. A package missing from the table is unknown.
 *
 * Most vendors expose the OpenAI chat-completions wire, so their packages run on the
 * OpenAI-compatible adapter; Anthropic's package runs on the Anthropic Messages adapter.
 */

import type { Protocol } from "./provider.js"

/** How one package is spoken, or why it cannot be. */
export type Support =
  | {
      readonly _tag: "Speaks"
      readonly protocol: Protocol
      /** The vendor's public endpoint, used when neither the config nor the catalog gives a base URL. */
      readonly baseURL?: string | undefined
    }
  | { readonly _tag: "Unavailable"; readonly reason: string }

const speaks = (protocol: Protocol, baseURL?: string): Support => ({ _tag: "Speaks", protocol, baseURL })
const unavailable = (reason: string): Support => ({ _tag: "Unavailable", reason })

const viaCompatible = (what: string) =>
  `${what}; configure it as "@ai-sdk/openai-compatible" with options.baseURL if it offers an OpenAI-compatible endpoint`

/** Package name → support. Keys are bare names (no version). */
export const table: Readonly<Record<string, Support>> = {
  "@ai-sdk/openai-compatible": speaks("openai-compatible"),
  "@ai-sdk/openai": speaks("openai-compatible", "https://api.openai.com/v1"),
  "@ai-sdk/anthropic": speaks("anthropic", "https://api.anthropic.com/v1"),
  "@ai-sdk/groq": speaks("openai-compatible", "https://api.groq.com/openai/v1"),
  "@ai-sdk/deepseek": speaks("openai-compatible", "https://api.deepseek.com/v1"),
  "@ai-sdk/xai": speaks("openai-compatible", "https://api.x.ai/v1"),
  "@ai-sdk/mistral": speaks("openai-compatible", "https://api.mistral.ai/v1"),
  "@ai-sdk/togetherai": speaks("openai-compatible", "https://api.together.xyz/v1"),
  "@ai-sdk/fireworks": speaks("openai-compatible", "https://api.fireworks.ai/inference/v1"),
  "@ai-sdk/cerebras": speaks("openai-compatible", "https://api.cerebras.ai/v1"),
  "@ai-sdk/deepinfra": speaks("openai-compatible", "https://api.deepinfra.com/v1/openai"),
  "@ai-sdk/perplexity": speaks("openai-compatible", "https://api.perplexity.ai"),
  "@perplexity-ai/sdk": speaks("openai-compatible", "https://api.perplexity.ai"),
  "@ai-sdk/cohere": speaks("openai-compatible", "https://api.cohere.ai/compatibility/v1"),
  "@ai-sdk/huggingface": speaks("openai-compatible", "https://router.huggingface.co/v1"),
  "@ai-sdk/moonshotai": speaks("openai-compatible", "https://api.moonshot.ai/v1"),
  "@ai-sdk/vercel": speaks("openai-compatible", "https://api.v0.dev/v1"),
  "@ai-sdk/gateway": speaks("openai-compatible", "https://ai-gateway.vercel.sh/v1"),
  "@openrouter/ai-sdk-provider": speaks("openai-compatible", "https://openrouter.ai/api/v1"),
  "@requesty/ai-sdk": speaks("openai-compatible", "https://router.requesty.ai/v1"),
  "ollama-ai-provider": speaks("openai-compatible", "http://127.0.0.1:11434/v1"),
  "ollama-ai-provider-v2": speaks("openai-compatible", "http://127.0.0.1:11434/v1"),
  "@ai-sdk/google": speaks("google", "https://generativelanguage.googleapis.com/v1beta"),
  "@ai-sdk/google-vertex": unavailable("Vertex AI needs Google Cloud credentials, which this runtime does not obtain"),
  "@ai-sdk/google-vertex/anthropic": unavailable(
    "Vertex AI needs Google Cloud credentials, which this runtime does not obtain"
  ),
  "@ai-sdk/amazon-bedrock": unavailable("Amazon Bedrock needs AWS request signing, which this runtime does not do"),
  "@ai-sdk/azure": unavailable(viaCompatible("Azure OpenAI needs a resource-specific deployment URL")),
  "workers-ai-provider": unavailable(viaCompatible("Cloudflare Workers AI needs an account-specific URL"))
}

/** The package name without a version suffix: `@ai-sdk/anthropic@2.0.1` → `@ai-sdk/anthropic`. */
export const bareName = (npm: string): string => npm.trim().replace(/^(@?[^@]+)@.*$/, "$1")

/** The packages that speak a protocol, for messages. */
export const supported = (): ReadonlyArray<string> =>
  Object.entries(table)
    .filter(([, support]) => support._tag === "Speaks")
    .map(([name]) => name)

/** What `npm` means here (a version suffix is ignored); an unknown package is unavailable, saying so. */
export const lookup = (npm: string): Support =>
  table[bareName(npm)] ?? unavailable(`no adapter for the provider package "${npm}"`)
