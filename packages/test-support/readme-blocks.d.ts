/** The ```ts blocks of a markdown file, import lines removed and trimmed. */
export declare function typescriptBlocks(url: URL): string[];
