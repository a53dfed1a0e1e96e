export * as Upward from "./upward.js"

import * as nodePath from "node:path"

/**
 * `directory`, then each parent up to `root` inclusive (nearest first); just `directory` when it is
 * not inside `root`. Pure path arithmetic: nothing is read from disk.
 */
export const directories = (directory: string, root: string): ReadonlyArray<string> => {
  const relative = nodePath.relative(root, directory)
  if (relative.startsWith("..") || nodePath.isAbsolute(relative)) return [directory]
  const out: Array<string> = []
  let current = directory
  for (;;) {
    out.push(current)
    if (current === root) return out
    const parent = nodePath.dirname(current)
    if (parent === current) return out
    current = parent
  }
}
