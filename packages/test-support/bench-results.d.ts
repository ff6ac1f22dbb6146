/** The fenced code blocks of a markdown text, each with the last `## ` heading above it. */
export declare function fencedBlocks(markdown: string): { heading: string; text: string }[];
/** The part of a markdown text from the `## ` heading that starts with `title` to the next `## ` heading. */
export declare function markdownSection(markdown: string, title: string): string;
