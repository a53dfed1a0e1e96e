/** A tiny element builder: the inspector renders with plain DOM, no framework. */

type Attribute = string | number | boolean | undefined | EventListener
export type Child = Node | string | null | undefined | false

/**
 * `h("button", { type: "button", onclick: … }, "Allow")`: an element with attributes (`on…` keys
 * add listeners; `true` sets an empty attribute; `false` and `undefined` leave it out) and children
 * (strings become text nodes, so nothing is ever parsed as HTML).
 */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Readonly<Record<string, Attribute>> = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    if (typeof value === "function") element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  append(element, children)
  return element
}

export const append = (parent: Node, children: ReadonlyArray<Child>): void => {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child)
  }
}

/** The element with `id`; the page's skeleton (index.html) has them all. */
export const byId = <E extends HTMLElement = HTMLElement>(id: string): E => {
  const element = document.getElementById(id)
  if (element === null) throw new Error(`index.html has no #${id}`)
  return element as E
}
