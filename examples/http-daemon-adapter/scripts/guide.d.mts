export declare const GUIDE: URL;
export declare const INCLUDE: RegExp;
export declare function region(file: string, name: string): string;
export declare function fill(text: string): string;
