// html-to-text 10 ships no type declarations; the one function Roost calls.
declare module 'html-to-text' {
  export function htmlToText(
    html: string,
    options?: {
      wordwrap?: number | false;
      limits?: { maxDepth?: number };
      selectors?: Array<{ selector: string; format?: string; options?: Record<string, unknown> }>;
    },
  ): string;
}
