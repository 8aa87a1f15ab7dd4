/**
 * The answer to `command`, or a timeout once the event loop has listened for `timeoutMs`.
 * A timer that fires while an answer waits unread in the socket (the loop was busy: CPU
 * pressure, a long GC) is not Redis being slow: the check waits for the loop's next poll of
 * its sockets (setImmediate runs after it), and a timer that fired late by more than half its
 * time gives the command one more such wait, from now. A command thus waits at most twice the
 * timeout plus the loop's own delays, and only an unanswering Redis fails it.
 */
export function answerWithin<T>(
  command: Promise<T>,
  timeoutMs: number,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let extended = false;
    let dueAt = 0;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      dueAt = Date.now() + timeoutMs;
      timer = setTimeout(() => setImmediate(check), timeoutMs);
    };
    const check = () => {
      if (settled) return;
      const lateMs = Date.now() - dueAt;
      if (!extended && lateMs > timeoutMs / 2) {
        extended = true;
        arm();
        return;
      }
      settled = true;
      reject(new Error(`no answer within ${timeoutMs} ms`));
    };
    arm();
    command.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
