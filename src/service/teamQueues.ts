/**
 * Per-team FIFO admission: at most `max` executions of a team run at once, the rest wait in
 * submission order. Teams have separate queues, so one team's backlog never delays another's.
 */
export class TeamQueues {
  readonly #teams = new Map<string, { running: Set<string>; pending: string[] }>();

  #team(team: string): { running: Set<string>; pending: string[] } {
    let t = this.#teams.get(team);
    if (t === undefined) {
      t = { running: new Set(), pending: [] };
      this.#teams.set(team, t);
    }
    return t;
  }

  enqueue(team: string, id: string): void {
    this.#team(team).pending.push(id);
  }

  /** Takes a waiting execution out of the queue (it was canceled); false when it was not waiting. */
  removePending(team: string, id: string): boolean {
    const t = this.#team(team);
    const i = t.pending.indexOf(id);
    if (i < 0) return false;
    t.pending.splice(i, 1);
    return true;
  }

  /** 1-based place in the team's queue, or undefined when not waiting. */
  position(team: string, id: string): number | undefined {
    const i = this.#team(team).pending.indexOf(id);
    return i < 0 ? undefined : i + 1;
  }

  running(team: string): number {
    return this.#team(team).running.size;
  }

  /** Moves waiting executions into free slots and returns the ones to start, in FIFO order. */
  admit(team: string, max: number): string[] {
    const t = this.#team(team);
    const started: string[] = [];
    while (t.running.size < max && t.pending.length > 0) {
      const id = t.pending.shift() as string;
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
