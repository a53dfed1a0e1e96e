import { describe, expect, it } from "vitest"
import { Paths } from "../../src/config/paths.js"

describe("Paths.fromEnv", () => {
  it("defaults to the XDG locations under home", () => {
    expect(Paths.fromEnv({}, "/home/u")).toEqual({
      dataDir: "/home/u/.local/share/opencode",
      databaseFile: "/home/u/.local/share/opencode/opencode.db",
      toolOutputDir: "/home/u/.local/share/opencode/tool-output",
      configDir: "/home/u/.config/opencode",
      cacheDir: "/home/u/.cache/opencode",
      modelsFile: "/home/u/.cache/opencode/models.json"
    })
  })

  it("honours XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME and OPENCODE_DB", () => {
    expect(
      Paths.fromEnv({ XDG_DATA_HOME: "/data", XDG_CONFIG_HOME: "/conf", XDG_CACHE_HOME: "/cache" }, "/home/u")
    ).toEqual({
      dataDir: "/data/opencode",
      databaseFile: "/data/opencode/opencode.db",
      toolOutputDir: "/data/opencode/tool-output",
      configDir: "/conf/opencode",
      cacheDir: "/cache/opencode",
      modelsFile: "/cache/opencode/models.json"
    })
    expect(Paths.fromEnv({ XDG_DATA_HOME: "/data", OPENCODE_DB: "/tmp/x.db" }, "/home/u")).toMatchObject({
      dataDir: "/data/opencode",
      databaseFile: "/tmp/x.db",
      toolOutputDir: "/data/opencode/tool-output"
    })
  })

  it("treats empty variables as unset", () => {
    expect(
      Paths.fromEnv({ XDG_DATA_HOME: "", XDG_CONFIG_HOME: "", XDG_CACHE_HOME: "", OPENCODE_DB: "" }, "/home/u")
    ).toEqual(Paths.fromEnv({}, "/home/u"))
  })
})
