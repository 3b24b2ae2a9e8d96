// Waits with an end: a keychain that never answers, a sidecar that will not exit or an extension that
// never activates must not hold up a save, a stop or a start.

/** `answer`, or a rejection ("no answer in N s") once `ms` have passed without one. A rejection, not
 * an `undefined`: a keychain that timed out must not read as "no key stored" (counts/sealed.ts). */
export function bounded<T>(answer: Thenable<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([Promise.resolve(answer), late]).finally(() => clearTimeout(timer));
}
