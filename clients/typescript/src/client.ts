// A typed client of the Orion Sidecar over ACP, on the official ACP TypeScript SDK: the SDK correlates requests
// and responses and parses ACP's own messages; this adds Orion's method and event types (generated from the
// sidecar's models), event subscription and the permission callback.
import { client, ndJsonStream, type ClientConnection } from "@agentclientprotocol/sdk";
import type { ByteTransport } from "./transport.js";
import type { AcpClientRequests, AcpEvents, AcpMethods } from "./generated/protocol.js";

export type PermissionRequest = AcpClientRequests["session/request_permission"]["params"];
export type PermissionAnswer = AcpClientRequests["session/request_permission"]["result"];
/** Decides a tool call the sidecar asks about (a gated tool, or a hook's `ask` with its reason in `_meta.orion`). */
export type PermissionHandler = (request: PermissionRequest) => PermissionAnswer | Promise<PermissionAnswer>;

/** One message from the sidecar, as it arrived on the wire (for validation or logging). */
export interface ReceivedMessage {
  kind: "result" | "error" | "notification" | "request";
  method: string;
  payload: unknown;
}

export interface OrionClientOptions {
  /** Without one, every permission request is answered `cancelled`: nothing is approved by default. */
  onPermission?: PermissionHandler;
  /** Sees every message received, before the SDK handles it. */
  onReceive?: (message: ReceivedMessage) => void;
}

type Listener<E extends keyof AcpEvents> = (payload: AcpEvents[E]) => void;

const CANCELLED: PermissionAnswer = { outcome: { outcome: "cancelled" } };

export class OrionClient {
  private readonly listeners = new Map<string, Set<(payload: never) => void>>();
  private connection: ClientConnection | undefined;

  private constructor(private readonly options: OrionClientOptions) {}

  /** Connect over `transport`; call `initialize` next (ACP's first request). */
  static connect(transport: ByteTransport, options: OrionClientOptions = {}): OrionClient {
    const orion = new OrionClient(options);
    const tapped = options.onReceive ? tap(transport, options.onReceive) : transport;
    const app = client()
      .onRequest("session/request_permission", async ({ params }) =>
        orion.options.onPermission ? await orion.options.onPermission(params as PermissionRequest) : CANCELLED)
      .onNotification("*", async ({ method, params }) => orion.dispatch(method, params));
    orion.connection = app.connect(ndJsonStream(tapped.writable, tapped.readable));
    return orion;
  }

  /** ACP's handshake. `events`: Orion's `_orion/` events wanted (all with `true`, or a list of names). */
  initialize(events: boolean | string[] = true): Promise<AcpMethods["initialize"]["result"]> {
    const capabilities = events === false ? {} : { _meta: { orion: { events } } };
    return this.request("initialize", { protocolVersion: 1, clientCapabilities: capabilities });
  }

  /** A typed request: an ACP method or one of Orion's `_orion/` extensions. */
  request<M extends keyof AcpMethods>(method: M, params: AcpMethods[M]["params"]): Promise<AcpMethods[M]["result"]> {
    return this.live().agent.request(method, params) as Promise<AcpMethods[M]["result"]>;
  }

  /** Subscribe to a notification (`session/update` or an `_orion/` event); returns the unsubscribe function. */
  on<E extends keyof AcpEvents>(event: E, listener: Listener<E>): () => void {
    let set = this.listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return () => set.delete(listener as (payload: never) => void);
  }

  /** Resolves when the connection closes (the sidecar exited, or close()). */
  get closed(): Promise<void> {
    return this.live().closed;
  }

  close(): void {
    this.connection?.close();
  }

  private live(): ClientConnection {
    if (this.connection === undefined) throw new Error("not connected");
    return this.connection;
  }

  private dispatch(method: string, params: unknown): void {
    for (const listener of this.listeners.get(method) ?? []) {
      try {
        listener(params as never);
      } catch (error) {
        console.error(`listener for ${method} failed`, error);
      }
    }
  }
}

/** Both directions read as lines on the side: requests sent name the responses that come back. */
function tap(transport: ByteTransport, onReceive: (message: ReceivedMessage) => void): ByteTransport {
  const pending = new Map<string, string>();
  const lines = (each: (message: Record<string, unknown>) => void) => {
    const decoder = new TextDecoder();
    let buffer = "";
    return new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk);
        buffer += decoder.decode(chunk, { stream: true });
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf("\n");
          if (line === "") continue;
          try {
            each(JSON.parse(line) as Record<string, unknown>);
          } catch {
            onReceive({ kind: "error", method: "(unparsable line)", payload: line });
          }
        }
      },
    });
  };
  const outgoing = lines((message) => {
    if (typeof message["method"] === "string" && message["id"] !== undefined) {
      pending.set(JSON.stringify(message["id"]), message["method"]);
    }
  });
  const incoming = lines((message) => {
    const method = message["method"];
    if (typeof method === "string") {
      const kind = message["id"] === undefined ? "notification" : "request";
      onReceive({ kind, method, payload: message["params"] });
      return;
    }
    const key = JSON.stringify(message["id"]);
    const requested = pending.get(key) ?? "(unknown request)";
    pending.delete(key);
    if ("error" in message) onReceive({ kind: "error", method: requested, payload: message["error"] });
    else onReceive({ kind: "result", method: requested, payload: message["result"] });
  });
  void outgoing.readable.pipeTo(transport.writable).catch(() => undefined);
  return { readable: transport.readable.pipeThrough(incoming), writable: outgoing.writable };
}
