export { OrionClient } from "./client.js";
export type { OrionClientOptions, PermissionAnswer, PermissionHandler, PermissionRequest, ReceivedMessage } from "./client.js";
export { fromChildProcess, fromLinePort } from "./transport.js";
export type { ByteTransport, LinePort } from "./transport.js";
export type * from "./generated/protocol.js";
