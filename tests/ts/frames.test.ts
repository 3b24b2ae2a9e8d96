// The extension's reader and writer of the sidecar's stdio (extension/sidecar/frames.ts), the
// MessageReader/MessageWriter of its vscode-jsonrpc connection: LSP framing however the pipe cuts
// it, each message handed on in the turn it is read, output that is not framing told once without
// stopping the messages after it, and each message written as one write.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { createMessageConnection, Message, ResponseError, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { FrameReader, FrameWriter, MAX_MESSAGE, SPARE_MAX } from '../../extension/sidecar/frames';
import { PartsRouter } from '../../extension/sidecar/rpc';
import { until } from './until';

function frame(message: object, headers = ''): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n${headers}\r\n`, 'ascii'), body]);
}

function reading(): { stream: PassThrough; messages: object[]; errors: string[]; closed: () => boolean } {
  const stream = new PassThrough();
  const reader = new FrameReader(stream);
  const messages: object[] = [];
  const errors: string[] = [];
  let closed = false;
  reader.onError((e) => errors.push(e.message));
  reader.onClose(() => (closed = true));
  reader.listen((m) => messages.push(m));
  return { stream, messages, errors, closed: () => closed };
}

const MESSAGES = [
  { jsonrpc: '2.0', id: 1, result: { text: 'héllo wörld 日本語 🙂' } },
  { jsonrpc: '2.0', method: 'gateway/parts', params: { requestId: 'a', parts: [{ type: 'text', value: '👍' }] } },
  { jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'x'.repeat(3000) } },
];

test('messages arrive whole and in order however the pipe cuts them: byte by byte, all at once, with a Content-Type header', () => {
  const bytes = Buffer.concat([frame(MESSAGES[0]), frame(MESSAGES[1], 'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n'), frame(MESSAGES[2])]);
  for (const size of [1, 2, 7, 64, bytes.length]) {
    const { stream, messages, errors } = reading();
    for (let at = 0; at < bytes.length; at += size) stream.write(bytes.subarray(at, at + size));
    assert.deepEqual(messages, MESSAGES, `cut every ${size} bytes`);
    assert.deepEqual(errors, []);
  }
});

test('a 5 MB message in 64 KiB pieces arrives once, whole', () => {
  const big = { jsonrpc: '2.0', method: 'gateway/parts', params: { requestId: 'b', parts: [{ type: 'text', value: 'ж'.repeat(2_500_000) }] } };
  const bytes = frame(big);
  const { stream, messages } = reading();
  for (let at = 0; at < bytes.length; at += 65536) stream.write(bytes.subarray(at, at + 65536));
  assert.deepEqual(messages, [big]);
});

test('every message is handed to the connection in the same turn as the read', () => {
  const { stream, messages } = reading();
  stream.emit('data', Buffer.concat(MESSAGES.map((m) => frame(m))));
  // Synchronously: vscode-jsonrpc's StreamMessageReader would not have delivered anything yet.
  assert.deepEqual(messages, MESSAGES);
});

test("vscode-jsonrpc's own reader delivers later (the turn the FrameReader saves)", async () => {
  const stream = new PassThrough();
  const got: unknown[] = [];
  new StreamMessageReader(stream).listen((m) => got.push(m));
  stream.emit('data', frame(MESSAGES[1]));
  assert.deepEqual(got, [], 'not in the same turn');
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(got, [MESSAGES[1]]);
});

test('over the connection, a parts handler that throws is told once and the stream goes on', async () => {
  const router = new PartsRouter();
  const invalid: string[] = [];
  const shown: unknown[] = [];
  router.onInvalid = (what) => invalid.push(what);
  router.subscribe('a', () => {
    throw new Error('boom');
  });
  router.subscribe('b', (parts) => shown.push(...parts));
  const stream = new PassThrough();
  const connection = createMessageConnection(new FrameReader(stream), new StreamMessageWriter(new PassThrough()));
  router.attach(connection);
  connection.listen();
  stream.write(frame(MESSAGES[1]));
  stream.write(frame({ jsonrpc: '2.0', method: 'gateway/parts' })); // no params at all
  stream.write(frame({ jsonrpc: '2.0', method: 'gateway/parts', params: { requestId: 'b', parts: [{ type: 'text', value: 'on' }] } }));
  await until(() => shown.length === 1, 'the parts after them are shown');
  assert.equal(invalid.length, 2);
  assert.match(invalid[0], /gateway\/parts notification could not be shown \(boom\)/);
  connection.dispose();
});

test('a response that is neither a result nor a JSON-RPC error rejects its request with an error that says so', async () => {
  const [toSidecar, toExtension] = [new PassThrough(), new PassThrough()];
  const extension = createMessageConnection(new FrameReader(toExtension), new StreamMessageWriter(toSidecar));
  extension.listen();
  const reader = new StreamMessageReader(toSidecar);
  reader.listen((m) => {
    const { id, params } = m as unknown as { id: number; params: { answer: object } };
    toExtension.write(frame({ jsonrpc: '2.0', id, ...params.answer }));
  });
  const answer = (reply: object) =>
    extension.sendRequest('gateway/countTokens', { answer: reply }).then(
      (result) => ({ result }),
      (error: ResponseError<unknown>) => ({ code: error.code, message: error.message }),
    );
  assert.deepEqual(await answer({ error: { code: 'not a number' } }), {
    code: -32603,
    message: 'The sidecar answered with an error that is not a JSON-RPC error',
  });
  assert.deepEqual(await answer({ error: null }), { code: -32603, message: 'The sidecar answered with an error that is not a JSON-RPC error' });
  assert.deepEqual(await answer({}), { code: -32603, message: 'The sidecar answered without a result or an error' });
  assert.deepEqual(await answer({ result: null }), { result: null });
  assert.deepEqual(await answer({ error: { code: 7, message: 'its own' } }), { code: 7, message: 'its own' });
  extension.dispose();
  reader.dispose();
});

test('a body that is not JSON, or not an object, is one error; the frames after it are read', () => {
  const { stream, messages, errors } = reading();
  const notJson = Buffer.from('Content-Length: 6\r\n\r\n{oops}');
  const notObject = Buffer.from('Content-Length: 1\r\n\r\n5');
  stream.write(Buffer.concat([notJson, notObject, frame(MESSAGES[0])]));
  assert.equal(errors.length, 2);
  assert.match(errors[0], /a message that is not JSON/);
  assert.match(errors[1], /not a JSON object/);
  assert.deepEqual(messages, [MESSAGES[0]]);
});

for (const [what, bytes, detail] of [
  ['a line that is not a header', 'this is not JSON-RPC\r\n\r\n', /unframed output: a header line without a colon \("this is not JSON-RPC"\)/],
  ['no Content-Length', 'Content-Type: text/plain\r\n\r\n{}', /unframed output: a header without a Content-Length/],
  ['a Content-Length that is not a number', 'Content-Length: 12abc\r\n\r\n{}', /not a length/],
  ['a Content-Length past the cap', `Content-Length: ${MAX_MESSAGE + 1}\r\n\r\n{}`, /not a length up to/],
  ['headers that never end', `Content-Length: 2${'x'.repeat(9000)}`, /a header of more than 8192 bytes/],
] as const) {
  test(`${what}: one error, nothing buffered from it, and no message made up`, () => {
    const { stream, messages, errors } = reading();
    stream.write(Buffer.from(bytes));
    assert.equal(errors.length, 1);
    assert.match(errors[0], detail);
    assert.deepEqual(messages, []);
    stream.write(frame(MESSAGES[0])); // a well-framed message after the failure is read
    assert.deepEqual(messages, [MESSAGES[0]]);
  });
}

test('the end of the stream closes the reader, once', async () => {
  const stream = new PassThrough();
  const reader = new FrameReader(stream);
  let closes = 0;
  reader.onClose(() => closes++);
  reader.listen(() => undefined);
  stream.end();
  await new Promise((resolve) => stream.once('close', resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(closes, 1);
});

test('over a real vscode-jsonrpc connection: parts of a request are shown before its result, and requests still work', async () => {
  const [toSidecar, toExtension] = [new PassThrough(), new PassThrough()];
  const router = new PartsRouter();
  const events: string[] = [];
  router.subscribe('r1', (parts) => events.push(`parts ${JSON.stringify(parts)}`));
  const extension = createMessageConnection(new FrameReader(toExtension), new StreamMessageWriter(toSidecar));
  router.attach(extension);
  const sidecar = createMessageConnection(new StreamMessageReader(toSidecar), new StreamMessageWriter(toExtension));
  sidecar.onRequest('gateway/chat', async () => {
    for (const value of ['a', 'b', 'c']) await sidecar.sendNotification('gateway/parts', { requestId: 'r1', parts: [{ type: 'text', value }] });
    return { done: true };
  });
  extension.listen();
  sidecar.listen();
  const result = await extension.sendRequest('gateway/chat', { requestId: 'r1' });
  events.push(`result ${JSON.stringify(result)}`);
  assert.deepEqual(events, [
    'parts [{"type":"text","value":"a"}]',
    'parts [{"type":"text","value":"b"}]',
    'parts [{"type":"text","value":"c"}]',
    'result {"done":true}',
  ]);
  extension.dispose();
  sidecar.dispose();
});

test('the writer: each message is one write of its whole frame, in the order sent, read back as vscode-jsonrpc reads it', async () => {
  const stream = new PassThrough();
  const writes: Buffer[] = [];
  const write = stream.write.bind(stream);
  stream.write = ((chunk: Buffer, ...rest: never[]) => (writes.push(Buffer.from(chunk)), write(chunk, ...rest))) as typeof stream.write;
  const writer = new FrameWriter(stream);
  const read: Message[] = [];
  new StreamMessageReader(stream).listen((m) => read.push(m));
  // Sent in one turn, none awaited: each is written at once, in order.
  const sent = MESSAGES.map((m) => writer.write(m));
  assert.equal(writes.length, MESSAGES.length, 'written in the turn they were sent');
  await Promise.all(sent);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(read, MESSAGES);
  assert.deepEqual(
    writes.map((w) => w.toString('utf8')),
    MESSAGES.map((m) => frame(m).toString('utf8')),
  );
});

test('the writer: a write to a closed input fails, is told with a count as vscode-jsonrpc tells it, and is not a throw', async () => {
  const stream = new PassThrough();
  const writer = new FrameWriter(stream);
  const told: (number | undefined)[] = [];
  writer.onError(([, , count]) => told.push(count));
  stream.destroy();
  await assert.rejects(writer.write(MESSAGES[0]), /input is closed/);
  await assert.rejects(writer.write(MESSAGES[0]), /input is closed/);
  assert.deepEqual(told, [1, 2]);
});

// A chat request's frame is 100–250 KB. Written from a fresh buffer each, the frames wait for V8's next
// collection, several at once, in malloc's main arena, which keeps what it grew to (bench/RESULTS.md,
// "malloc's main arena"); the writer keeps one buffer for them. Over a real pipe to a child process.
test('the writer: 150 chat-sized frames to a real pipe arrive byte for byte and leave no buffer per frame behind', { timeout: 60_000 }, async () => {
  const script =
    "const h=require('crypto').createHash('sha1');let n=0;process.stdin.on('data',d=>{h.update(d);n+=d.length}).on('end',()=>process.stdout.write(n+' '+h.digest('hex')))";
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const killer = setTimeout(() => child.kill('SIGKILL'), 50_000).unref();
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const writer = new FrameWriter(child.stdin);
  const expected = createHash('sha1');
  let bytes = 0;
  const message = (i: number) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'gateway/chat',
    params: { messages: [{ role: 'user', content: `${i} ü ${'file line '.repeat(10_000 + ((i * 997) % 8000))}` }] },
  });
  const send = (i: number) => {
    const m = message(i);
    const json = JSON.stringify(m); // hashed as text: buffers of the test's own would count below
    const header = `Content-Length: ${Buffer.byteLength(json, 'utf8')}\r\n\r\n`;
    expected.update(header, 'latin1').update(json, 'utf8');
    bytes += header.length + Buffer.byteLength(json, 'utf8');
    return writer.write(m);
  };
  // A burst first: the frames sent while the kept buffer is being written get their own, and every
  // frame still arrives whole, in order.
  await Promise.all([send(0), send(1), send(2), send(3)]);
  const before = process.memoryUsage().arrayBuffers;
  let most = 0;
  for (let i = 4; i < 150; i++) {
    await send(i);
    await new Promise((resolve) => setImmediate(resolve));
    most = Math.max(most, process.memoryUsage().arrayBuffers - before);
  }
  child.stdin.end();
  await exited;
  clearTimeout(killer);
  assert.equal(out, `${bytes} ${expected.digest('hex')}`);
  // Kept: one buffer, 256 KB for these frames (at most SPARE_MAX). A fresh buffer per frame: 0.9–1.0 MB
  // of them here, waiting for V8's next collection (1.9 MB at once in the soak).
  assert.ok(most <= 512 * 1024 && most <= SPARE_MAX, `buffers held while writing: ${(most / 1024).toFixed(0)} KB`);
});
