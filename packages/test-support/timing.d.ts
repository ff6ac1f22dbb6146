/** Settles like `promise`; rejects with "<what> did not finish within <ms> ms" when it has not settled by then. */
export declare function within<T>(ms: number, promise: Promise<T>, what?: string): Promise<T>;
/** Resolves once `condition()` holds, looking again at waits that grow from 2 ms to 50 ms; rejects naming `what` after `ms`. */
export declare function waitFor(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void>;
