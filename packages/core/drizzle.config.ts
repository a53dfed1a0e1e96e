import { defineConfig } from "drizzle-kit"

/** `pnpm db:generate` diffs `src/storage/tables.ts` against `migrations/` offline and writes the next migration. */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/storage/tables.ts",
  out: "./migrations"
})
