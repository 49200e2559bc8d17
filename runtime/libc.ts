/** @module glibc through the koffi FFI, for the few calls Node does not offer (malloc_trim,
 * mallopt). koffi is imported on first use only: a platform without its prebuilt
 * binary, or without glibc, fails here, where each caller decides what that means. */
import type { IKoffiLib } from 'koffi'

export interface Libc {
  lib: IKoffiLib
  /** errno as the last foreign call on this thread left it. */
  errno(): number
}

let loaded: Promise<Libc> | null = null

/** This thread's handle on libc.so.6; rejects off Linux or when it cannot be loaded. */
export function loadLibc(): Promise<Libc> {
  loaded ??= (async () => {
    if (process.platform !== 'linux') throw new Error(`no glibc on ${process.platform}`)
    const { default: koffi } = await import('koffi')
    return { lib: koffi.load('libc.so.6'), errno: () => koffi.errno() }
  })()
  return loaded
}
