// html-to-text 10 ships no type declarations; the one function Roost calls.
declare module 'html-to-text' {
  export function htmlToText(
    html: string,
    options?: { wordwrap?: number | false; limits?: { maxDepth?: number } },
  ): string;
}
