// The viewer's read commands over the WebAssembly build (`web/`, hamlet-web): one instance
// holds one recording and answers each command through hamlet-core's dispatcher, the same
// door the desktop window's commands go through. Used by the browser's worker and by the
// parity test under Node; it needs only WebAssembly, TextEncoder and TextDecoder.
//
// A trap (a panic in the module) breaks the instance: `ask` then rejects with the message
// `BUG`, and the owner makes a new door and opens the recording again.

export const BUG = 'the viewer failed on this request (a bug); it has been reset';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class Door {
  /** Instantiates the module from its bytes (an ArrayBuffer or a typed array). */
  static async load(wasmBytes) {
    const { instance } = await WebAssembly.instantiate(wasmBytes, {});
    return new Door(instance.exports);
  }

  constructor(exports) {
    this.x = exports;
    this.broken = false;
  }

  // Writes `head` (a string) then `body` (bytes) into the inbox, calls `fn` with the head's
  // length, and answers { status, text } from the outbox.
  call(fn, head, body) {
    if (this.broken) throw new Error(BUG);
    const h = encoder.encode(head);
    const total = h.length + body.length;
    let status;
    try {
      const at = this.x.hamlet_inbox(total);
      const inbox = new Uint8Array(this.x.memory.buffer, at, total);
      inbox.set(h, 0);
      inbox.set(body, h.length);
      status = fn(h.length);
    } catch (e) {
      this.broken = true;
      throw new Error(BUG);
    }
    const out = new Uint8Array(this.x.memory.buffer, this.x.hamlet_outbox(), this.x.hamlet_outbox_len());
    return { status, text: decoder.decode(out) };
  }

  /** Opens a recording (`name`, its bytes): answers the `opened` JSON text, or throws its error. */
  open(name, bytes) {
    const { status, text } = this.call(this.x.hamlet_open, name, new Uint8Array(bytes));
    if (status !== 0) throw new Error(text);
    return text;
  }

  /** Answers read command `command` with `args` (an object): { ok, text }, text being JSON when ok. */
  ask(command, args) {
    const { status, text } = this.call(this.x.hamlet_ask, command, encoder.encode(JSON.stringify(args ?? {})));
    return { ok: status === 0, text };
  }
}
