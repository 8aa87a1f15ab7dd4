import type { Timers } from '../../src/platform/jobs';

export { seededRandom } from '../helpers/seeded-random';

interface Task {
  at: number;
  order: number;
  owner: string;
  run: () => void;
  cancelled: boolean;
}

/**
 * Simulated time, and the processes that live in it. Every wait of every simulated instance
 * (a statement's round trip, a request, a timer) is a task at a point in simulated time; tasks
 * run one at a time, in time order, ties broken by the seed, and each one's promise
 * continuations run to their end before the next task, as in one Node process. An instance
 * that crashes has every task of its dropped (its promises never settle); one that is frozen
 * has its tasks wait until it is thawed.
 */
export class World {
  now: number;
  private readonly queue: Task[] = [];
  private readonly crashed = new Set<string>();
  private readonly frozenUntil = new Map<string, number>();

  constructor(
    readonly random: () => number,
    start: number,
  ) {
    this.now = start;
  }

  /** `run` at `at`, as the instance `owner`. */
  schedule(at: number, owner: string, run: () => void): Task {
    const task: Task = {
      at,
      // ties in time broken at random, by the seed
      order: this.random(),
      owner,
      run,
      cancelled: false,
    };
    this.push(task);
    return task;
  }

  /** Resolves `ms` from now, for `owner`, unless it crashes first. */
  delay(owner: string, ms: number): Promise<void> {
    return new Promise((resolve) =>
      this.schedule(this.now + ms, owner, resolve),
    );
  }

  timersOf(owner: string): Timers {
    return {
      set: (run, ms) => this.schedule(this.now + ms, owner, run),
      clear: (handle) => {
        if (handle) (handle as Task).cancelled = true;
      },
    };
  }

  crash(owner: string): void {
    this.crashed.add(owner);
  }

  isCrashed(owner: string): boolean {
    return this.crashed.has(owner);
  }

  freeze(owner: string, until: number): void {
    this.frozenUntil.set(owner, until);
  }

  /** Runs every task up to `until`, then sets the clock there. */
  async runUntil(until: number): Promise<void> {
    for (;;) {
      const task = this.peek();
      if (!task || task.at > until) break;
      this.pop();
      if (task.cancelled || this.crashed.has(task.owner)) continue;
      const thawsAt = this.frozenUntil.get(task.owner);
      if (thawsAt !== undefined && thawsAt > task.at) {
        // the same task, so that its owner can still cancel it while frozen
        task.at = thawsAt;
        task.order = this.random();
        this.push(task);
        continue;
      }
      this.now = Math.max(this.now, task.at);
      task.run();
      // the task's promise continuations, to their end, before the next task
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.now = Math.max(this.now, until);
  }

  private push(task: Task): void {
    const heap = this.queue;
    heap.push(task);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i], heap[parent])) break;
      [heap[i], heap[parent]] = [heap[parent], heap[i]];
      i = parent;
    }
  }

  private peek(): Task | undefined {
    return this.queue[0];
  }

  private pop(): Task | undefined {
    const heap = this.queue;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < heap.length && before(heap[left], heap[smallest]))
          smallest = left;
        if (right < heap.length && before(heap[right], heap[smallest]))
          smallest = right;
        if (smallest === i) break;
        [heap[i], heap[smallest]] = [heap[smallest], heap[i]];
        i = smallest;
      }
    }
    return top;
  }
}

function before(a: Task, b: Task): boolean {
  return a.at < b.at || (a.at === b.at && a.order < b.order);
}
