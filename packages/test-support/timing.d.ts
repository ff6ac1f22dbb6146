/** Settles like `promise`; rejects with "<what> did not finish within <ms> ms" when it has not settled by then. */
export declare function within<T>(ms: number, promise: Promise<T>, what?: string): Promise<T>;
