// The HTML documents the service serves itself (a callback's page, the inspector's shell and
// home): one skeleton, and the escaping of every text a caller wrote into one.

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ENTITIES[c]);

/** An English, mobile-ready document: `head` after the charset and viewport, `body` as given. */
export const htmlPage = (head: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${head}
</head>
<body>
${body}
</body>
</html>
`;
