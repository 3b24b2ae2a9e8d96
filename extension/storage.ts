// JSON files in global storage, which every VS Code window shares (each with its own sidecar).
// Reads never throw. Writes are atomic: a unique temporary file in the same folder, then a rename,
// so a reader in another window sees the old file or the new one, never part of one.
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

type Warn = (message: string) => void;

/** Bytes of a JSON file of ours read at most (token-counts.json: 8M characters of tool strings and
 * 100,000 hashed counts, models.json: a few hundred KB); a larger file was not written by us. */
export const MAX_JSON_BYTES = 64 << 20;
const CHUNK = 1 << 16;

/** The bytes of `file`, which someone else may have replaced with anything: a link to /dev/zero, a
 * FIFO, a file that grows. Opened without blocking (a FIFO would otherwise wait for a writer, and
 * activate() or deactivate() with it), the open handle must be a regular file, and at most
 * `maxBytes` are read, whatever size stat reports (a /proc file says 0): one more and it is refused.
 * Rejects with ENOENT as fs does, else with an Error whose message says why. Every read of a file
 * in global storage, or of the profile's, goes through here. */
export async function readBounded(file: string, maxBytes: number): Promise<Buffer> {
  const handle = await fs.open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    if (!(await handle.stat()).isFile()) throw new Error('not a regular file');
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

/** The parsed file, or `undefined` when it is missing, unreadable, too large, not a regular file or
 * not JSON (said once via `warn`). */
export async function readJson(file: string, warn: Warn, maxBytes = MAX_JSON_BYTES): Promise<unknown> {
  let text: string;
  try {
    text = (await readBounded(file, maxBytes)).toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') warn(`Could not read ${path.basename(file)} (${(error as Error).message}); going on without it.`);
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    warn(`${path.basename(file)} is not valid JSON; going on without it (it is rewritten at the next save).`);
    return undefined;
  }
}

export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value));
}

export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}-${randomUUID()}.tmp`;
  try {
    await fs.writeFile(temp, data);
    await renameRetrying(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
}

// Windows refuses to replace a file another process holds open without delete sharing; such
// holds are brief.
async function renameRetrying(from: string, to: string, attempts = 5): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fs.rename(from, to);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (attempt >= attempts || !(code === 'EPERM' || code === 'EACCES' || code === 'EBUSY')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}
