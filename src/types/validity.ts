/**
 * An Arrow validity bitmap that costs nothing until the first null: most columns have none,
 * and then the Data carries no bitmap at all.
 */
export class Validity {
  private bits: Uint8Array | null = null;
  nullCount = 0;

  /** Record slot `i` as null. */
  setNull(i: number): void {
    if (this.bits === null) {
      this.bits = new Uint8Array(Math.max(64, (i >> 3) + 1) * 2);
      // Every slot before the first null was valid.
      this.bits.fill(0xff, 0, i >> 3);
      for (let j = i & ~7; j < i; j++) this.bits[j >> 3]! |= 1 << (j & 7);
    } else if (i >> 3 >= this.bits.length) {
      this.grow(i);
    }
    this.nullCount++;
  }

  /** Record slot `i` as valid (only needed once a bitmap exists). */
  setValid(i: number): void {
    const bits = this.bits;
    if (bits === null) return;
    if (i >> 3 >= bits.length) this.grow(i);
    this.bits![i >> 3]! |= 1 << (i & 7);
  }

  private grow(i: number): void {
    const next = new Uint8Array(Math.max(this.bits!.length * 2, (i >> 3) + 1));
    next.set(this.bits!);
    this.bits = next;
  }

  /** The bitmap and null count of `length` slots; resets for the next batch. */
  take(length: number): { nullCount: number; nullBitmap: Uint8Array | undefined } {
    const out = {
      nullCount: this.nullCount,
      nullBitmap: this.bits === null ? undefined : this.bits.subarray(0, (length + 7) >> 3),
    };
    this.bits = null;
    this.nullCount = 0;
    return out;
  }
}
