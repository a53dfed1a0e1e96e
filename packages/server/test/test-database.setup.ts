import { TestDatabase } from "@opencode-ai/core/testing"
import { afterAll } from "vitest"

// Under `OPENCODE_TEST_DATABASE=postgres`: the databases this test file created go with it.
afterAll(() => TestDatabase.dropCreated(), 120_000)
