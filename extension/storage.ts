// JSON files in global storage, which every VS Code window shares (each with its own sidecar).
// Reads never throw. Writes are atomic: a unique temporary file in the same folder, then a rename,
// so a reader in another window sees the old file or the new one, never part of one.
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

type Warn = (message: string) => void;

/** The parsed file, or `undefined` when it is missing, unreadable or not JSON (said once via `warn`). */
export async function readJson(file: string, warn: Warn): Promise<unknown> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
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
