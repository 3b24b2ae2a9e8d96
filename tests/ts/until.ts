// The one wait of the Node tests: for an event a test needs, polled, with an end (a bound on a hang,
// not a performance assertion: those belong in the bench). A test never sleeps a fixed time instead.
import assert from 'node:assert/strict';

/** Resolves once `condition` holds, checked every `every` ms; fails naming `what` if it does not
 * within `ms`. A condition may be asynchronous (a call the test makes again until it answers). */
export async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000, every = 10): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}
