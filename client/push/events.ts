/** What a push tells its caller as it goes: steps in words, and each node's fetch progress. */
export type PushEvent =
  | { readonly type: 'step'; readonly message: string }
  | { readonly type: 'progress'; readonly nodeId: number; readonly bytesDone: number; readonly bytesTotal: number; readonly rate: number }
