/**
 * Per-team FIFO admission: at most `max` executions of a team run at once, the rest wait in
 * submission order. Teams have separate queues, so one team's backlog never delays another's.
 * An execution takes its place when it is submitted and may start once it is `ready` (its record
 * is durable); one not ready yet holds back those behind it, so they start in queue order.
 */
export class TeamQueues {
  readonly #teams = new Map<string, { running: Set<string>; pending: Waiting[] }>();

  #team(team: string): { running: Set<string>; pending: Waiting[] } {
    let t = this.#teams.get(team);
    if (t === undefined) {
      t = { running: new Set(), pending: [] };
      this.#teams.set(team, t);
    }
    return t;
  }

  /** Queues at the end, not startable until markReady. */
  enqueue(team: string, id: string): void {
    this.#team(team).pending.push({ id, ready: false });
  }

  markReady(team: string, id: string): void {
    const w = this.#team(team).pending.find((p) => p.id === id);
    if (w !== undefined) w.ready = true;
  }

  /** Takes a waiting execution out of the queue (it was canceled); false when it was not waiting. */
  removePending(team: string, id: string): boolean {
    const t = this.#team(team);
    const i = t.pending.findIndex((p) => p.id === id);
    if (i < 0) return false;
    t.pending.splice(i, 1);
    return true;
  }

  /** 1-based place in the team's queue, or undefined when not waiting. */
  position(team: string, id: string): number | undefined {
    const i = this.#team(team).pending.findIndex((p) => p.id === id);
    return i < 0 ? undefined : i + 1;
  }

  running(team: string): number {
    return this.#team(team).running.size;
  }

  /** Moves waiting executions into free slots and returns the ones to start, in FIFO order. */
  admit(team: string, max: number): string[] {
    const t = this.#team(team);
    const started: string[] = [];
    while (t.running.size < max && t.pending[0]?.ready === true) {
      const { id } = t.pending.shift() as Waiting;
      t.running.add(id);
      started.push(id);
    }
    return started;
  }

  finish(team: string, id: string): void {
    this.#team(team).running.delete(id);
  }

  allRunning(): string[] {
    return [...this.#teams.values()].flatMap((t) => [...t.running]);
  }
}

interface Waiting {
  id: string;
  ready: boolean;
}
