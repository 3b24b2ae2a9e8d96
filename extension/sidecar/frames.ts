// The sidecar's stdio as vscode-jsonrpc's MessageReader and MessageWriter (its public interfaces,
// on its AbstractMessageReader/Writer): the frames vscode-jsonrpc's StreamMessageReader/Writer read
// and write (headers, a blank line, then Content-Length bytes of UTF-8 JSON), with the bounds those
// lack. The reader ends a frame too large or cut short (its Content-Length runs past the bytes that
// came) instead of waiting for good, tells a body that is not a JSON object as a read error (the
// session then ends: the stream cannot be trusted), hands each message to the connection in the
// turn it was read (vscode-jsonrpc's own reader awaits a semaphore per message), and turns a
// response that is neither a result nor a well-formed error into an error that says so (the
// connection would reject it with an empty message, or never settle it). The writer writes each
// message as one write, in the turn it is sent.
import { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { AbstractMessageReader, AbstractMessageWriter, DataCallback, Disposable, ErrorCodes, Message, MessageReader, MessageWriter } from 'vscode-jsonrpc/node';

const HEADER_END = Buffer.from('\r\n\r\n', 'latin1');
const CONTENT_LENGTH = Buffer.from('Content-Length: ', 'latin1');
// The header line pygls writes after the length (its JsonRPCProtocol.CONTENT_TYPE and CHARSET).
const PYGLS_TYPE = Buffer.from('\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8', 'latin1');
const MAX_HEADER = 8 * 1024;
const EMPTY = Buffer.alloc(0);
// The sidecar caps one gateway event at 16 MiB (server/gateway_lm/gateway/sse.py); JSON escaping can grow it
// several times. A length past this is a broken stream, not a message to buffer.
export const MAX_MESSAGE = 128 << 20;
/** A frame cut short (its Content-Length runs past the bytes that came) waits this long without a
 * byte more, then the output counts as unframed: the sidecar writes each frame in one go, so the
 * rest of a frame is milliseconds behind its start. Without the bound, every count and chat after
 * it would wait for good for bytes that are not coming. */
export const PARTIAL_FRAME_MS = 10_000;
// The largest frame written from the writer's kept buffer; a larger one gets a buffer of its own.
export const SPARE_MAX = 1 << 20;

export class FrameReader extends AbstractMessageReader implements MessageReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private bodyLength: number | undefined; // once the current frame's headers have been read
  private callback: DataCallback = () => undefined;
  private partial: NodeJS.Timeout | undefined; // armed while part of a frame is buffered
  private received = 0; // chunks read, to tell a stalled frame from one whose rest is being read

  constructor(
    private readonly stream: Readable,
    private readonly partialFrameMs = PARTIAL_FRAME_MS,
  ) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    const onData = (chunk: Buffer) => this.onData(chunk);
    const onError = (error: Error) => this.fireError(error);
    const onClose = () => this.fireClose();
    this.stream.on('data', onData).on('error', onError).on('close', onClose); // as vscode-jsonrpc: once, at 'close'
    return {
      dispose: () => {
        this.stream.off('data', onData).off('error', onError).off('close', onClose);
        this.disarm();
      },
    };
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    this.received++;
    this.readFrames();
    if (this.size === 0) this.disarm();
    else if (this.partial) this.partial.refresh();
    else this.partial = setTimeout(() => this.stalled(), this.partialFrameMs).unref();
  }

  private readFrames(): void {
    for (;;) {
      if (this.bodyLength === undefined && (this.size === 0 || !this.readHeaders())) return;
      const length = this.bodyLength!;
      if (this.size < length) return;
      this.bodyLength = undefined;
      this.deliver(this.consume(length));
    }
  }

  /** No byte for partialFrameMs while part of a frame waits. Timers run before the loop reads what
   * arrived meanwhile (a host busy that long): the check runs again after that read. */
  private stalled(): void {
    const seen = this.received;
    setImmediate(() => {
      if (this.received !== seen || this.size === 0) return; // a read meanwhile re-armed the timer
      const what = this.bodyLength === undefined ? 'headers' : `${this.size} of its ${this.bodyLength} bytes`;
      this.fail(`a frame cut short (${what}, and nothing more for ${this.partialFrameMs / 1000} s)`);
    });
  }

  private disarm(): void {
    clearTimeout(this.partial);
    this.partial = undefined;
  }

  /** Reads the next frame's headers if they have all arrived; false when it must wait or failed. */
  private readHeaders(): boolean {
    const buffer = this.joined();
    const end = buffer.indexOf(HEADER_END);
    if (end < 0) {
      if (this.size > MAX_HEADER) this.fail(`a header of more than ${MAX_HEADER} bytes`);
      return false;
    }
    const length = plainContentLength(buffer, end) ?? contentLength(buffer.toString('latin1', 0, end));
    if (typeof length === 'string') {
      this.fail(length);
      return false;
    }
    this.consume(end + HEADER_END.length);
    this.bodyLength = length;
    return true;
  }

  private deliver(body: Buffer): void {
    let message: Message;
    try {
      message = JSON.parse(body.toString('utf8')) as Message;
    } catch (error) {
      this.fireError(new Error(`a message that is not JSON (${error instanceof Error ? error.message : String(error)})`));
      return;
    }
    if (typeof message !== 'object' || message === null) {
      this.fireError(new Error('a message that is not a JSON object'));
      return;
    }
    this.callback(checkedResponse(message));
  }

  /** Output that lost its framing cannot be resynchronised: what is buffered is dropped. */
  private fail(what: string): void {
    this.disarm();
    this.chunks = [];
    this.size = 0;
    this.bodyLength = undefined;
    this.fireError(new Error(`unframed output: ${what}`));
  }

  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.size)];
    return this.chunks[0] ?? EMPTY;
  }

  /** The first `n` buffered bytes, removed from the buffer. */
  private consume(n: number): Buffer {
    const buffer = this.joined();
    const rest = buffer.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.size = rest.length;
    return buffer.subarray(0, n);
  }
}

/** A response as vscode-jsonrpc can settle it: one whose `error` is not a JSON-RPC error, or that
 * has neither a result nor an error, becomes an error that says so (the bytes come from another
 * process). Requests and notifications pass as they are. */
function checkedResponse(message: Message): Message {
  const { id, method, result, error } = message as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
  if (method !== undefined || id === undefined) return message;
  let problem: string | undefined;
  if (error !== undefined) {
    const { code, message: text } = (error ?? {}) as { code?: unknown; message?: unknown };
    if (!Number.isSafeInteger(code) || typeof text !== 'string') problem = 'The sidecar answered with an error that is not a JSON-RPC error';
  } else if (result === undefined) {
    problem = 'The sidecar answered without a result or an error';
  }
  return problem ? ({ jsonrpc: '2.0', id, error: { code: ErrorCodes.InternalError, message: problem } } as Message) : message;
}

/** The length of a header block that is only `Content-Length: <digits>`, or that followed by the
 * one Content-Type pygls writes (every frame the sidecar writes), read from the bytes: string and
 * regex work here ran cold on every first part (rfcs/0005-performance.md, "The first part"). */
function plainContentLength(buffer: Buffer, headersEnd: number): number | undefined {
  const start = CONTENT_LENGTH.length;
  const typed = headersEnd > start + PYGLS_TYPE.length && buffer.compare(PYGLS_TYPE, 0, PYGLS_TYPE.length, headersEnd - PYGLS_TYPE.length, headersEnd) === 0;
  const end = typed ? headersEnd - PYGLS_TYPE.length : headersEnd;
  if (end <= start || end > start + 10 || buffer.compare(CONTENT_LENGTH, 0, start, 0, start) !== 0) return undefined;
  let length = 0;
  for (let at = start; at < end; at++) {
    const digit = buffer[at] - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    length = length * 10 + digit;
  }
  return length <= MAX_MESSAGE ? length : undefined;
}

/** The Content-Length of a header block, or what is wrong with it. Other headers (Content-Type) are
 * allowed; the body is always UTF-8 JSON, as pygls writes it. */
function contentLength(headers: string): number | string {
  let length: number | undefined;
  for (const line of headers.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) return `a header line without a colon (${JSON.stringify(line.slice(0, 40))})`;
    if (line.slice(0, colon).trim().toLowerCase() !== 'content-length') continue;
    const value = line.slice(colon + 1).trim();
    length = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
    if (!(length <= MAX_MESSAGE)) return `a Content-Length that is not a length up to ${MAX_MESSAGE} (${JSON.stringify(value.slice(0, 20))})`;
  }
  return length ?? 'a header without a Content-Length';
}

/** The sidecar's stdin, as vscode-jsonrpc's StreamMessageWriter writes it (`Content-Length`, a blank
 * line, UTF-8 JSON), but each message in one write, in the same turn it is sent. vscode-jsonrpc's
 * writer queues each message behind a setImmediate (its semaphore) and then writes the header and
 * the body as two writes with an await between them: a token count, which Copilot awaits one at a
 * time by the thousand, would wait a turn of the loop on its way out (rfcs/0005-performance.md,
 * "The round trip"). */
export class FrameWriter extends AbstractMessageWriter implements MessageWriter {
  private errors = 0;
  // One buffer kept for the writer's life and reused for each frame once the write before it has
  // called back. A fresh buffer per chat request (100–250 KB) is freed only when V8 next collects it,
  // so several wait at once, in malloc's main arena (under its mmap threshold), which grows to hold
  // them and keeps what it grew to: most of the extension host's `[heap]` growth over a long session
  // (bench/RESULTS.md, "malloc's main arena"). Only over a socket (the sidecar's stdin is
  // one), which has copied the bytes when it calls back; other streams (a PassThrough) may still hold them.
  private spare: Buffer | undefined;
  private spareBusy = false;
  private readonly reuse: boolean;

  constructor(private readonly stream: Writable) {
    super();
    this.reuse = stream instanceof Socket;
    stream.on('error', (error: Error) => this.fireError(error));
    stream.on('close', () => this.fireClose());
  }

  /** As MessageWriter: the connection's messages. A failed write is told, counted, as vscode-jsonrpc
   * tells it (the session tolerates a few). */
  write(message: Message): Promise<void> {
    return new Promise((resolve, reject) =>
      this.send(message, (error) => {
        if (!error) return resolve();
        this.errors++;
        this.fireError(error, message, this.errors);
        reject(error);
      }),
    );
  }

  /** Writes one message now; `written` is told once the stream has taken it, or why it could not. */
  private send(message: Message, written: (error: Error | null | undefined) => void): void {
    if (this.stream.destroyed || !this.stream.writable) {
      written(new Error("the sidecar's input is closed"));
      return;
    }
    // Header and body encoded into one buffer: a chat request's body is 100–250 KB, encoded once.
    const json = JSON.stringify(message);
    const length = Buffer.byteLength(json, 'utf8');
    const header = `Content-Length: ${length}\r\n\r\n`;
    const size = header.length + length;
    const reused = this.reuse && !this.spareBusy && size <= SPARE_MAX;
    if (reused && (this.spare?.length ?? 0) < size) this.spare = Buffer.allocUnsafeSlow(Math.min(SPARE_MAX, 2 ** Math.ceil(Math.log2(Math.max(size, 4096)))));
    const frame = reused ? this.spare!.subarray(0, size) : Buffer.allocUnsafe(size);
    frame.write(header, 0, 'latin1');
    frame.write(json, header.length, 'utf8');
    if (!reused) {
      this.stream.write(frame, written);
      return;
    }
    this.spareBusy = true;
    this.stream.write(frame, (error) => {
      this.spareBusy = false;
      written(error);
    });
  }

  end(): void {
    this.stream.end();
  }
}
