// Duplex line transports: what the ACP SDK's ndJsonStream needs (a byte stream each way), from a Node child
// process or from anything that can write a line and report lines (Tauri's shell plugin, a WebSocket bridge).
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { Readable, Writable } from "node:stream";

/** A byte stream each way: the sidecar's stdout to read, its stdin to write. */
export interface ByteTransport {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
}

/** A transport that deals in lines (without their newline), as Tauri's shell plugin does. */
export interface LinePort {
  /** Send one line to the sidecar (the newline is added). */
  write(line: string): void | Promise<void>;
  /** Register the line handler; `onClose` when the sidecar's output ends. Called once. */
  listen(onLine: (line: string) => void, onClose: (error?: unknown) => void): void;
  /** Stop the sidecar's side (kill the process, close the socket). */
  close?(): void | Promise<void>;
}

/** The sidecar as a Node child process (`spawn(python, ["-m", "sidecar"])`, or the built executable). */
export function fromChildProcess(child: ChildProcessWithoutNullStreams): ByteTransport {
  return {
    readable: Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>,
    writable: Writable.toWeb(child.stdin) as unknown as WritableStream<Uint8Array>,
  };
}

/** Any line port as byte streams. Lines arrive whole; a line holding a newline would split a message and is refused. */
export function fromLinePort(port: LinePort): ByteTransport {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let pending = "";
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      port.listen(
        (line) => controller.enqueue(encoder.encode(line.endsWith("\n") ? line : `${line}\n`)),
        (error) => (error === undefined ? controller.close() : controller.error(error)),
      );
    },
    async cancel() {
      await port.close?.();
    },
  });
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      pending += decoder.decode(chunk, { stream: true });
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        await port.write(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
        newline = pending.indexOf("\n");
      }
    },
    async close() {
      await port.close?.();
    },
  });
  return { readable, writable };
}
