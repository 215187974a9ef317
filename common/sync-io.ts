import { readSync, writeSync } from 'node:fs'

/** Synchronous positional I/O for worker threads, looping over short reads and writes. */
export function writeAll(fd: number, b: Uint8Array, position: number): number {
  let done = 0
  while (done < b.length) done += writeSync(fd, b, done, b.length - done, position + done)
  return done
}

/** Fills `buf` from `position`; returns how many bytes were read (less only at end of file). */
export function readUpTo(fd: number, buf: Uint8Array, position: number): number {
  let done = 0
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, position + done)
    if (n === 0) break
    done += n
  }
  return done
}
