export { BasicAuth } from "./middleware/basic-auth.js"
export { Router } from "./router.js"
export { Serve } from "./serve.js"
export { WebHandler } from "./web-handler.js"
