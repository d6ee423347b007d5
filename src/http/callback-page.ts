// The page a person answers a callback's question on (docs/api.md §3.6): the question, one
// button per option, a comment box when allowed. No script, no request to anyone else: a
// strict Content-Security-Policy allows this page's own style (by hash) and a form posting
// to its own URL, nothing more. Every text a caller wrote is escaped. GET shows; only the
// form's POST answers (link scanners fetch what is mailed).
import { hash } from 'node:crypto';
import type { HumanQuestion } from '../core/callbacks.js';
import { escapeHtml, htmlPage } from './html-page.js';

export { escapeHtml };

const STYLE = `
body{font:1.05rem/1.5 system-ui,sans-serif;margin:0;padding:1.25rem;color:#1a1a1a;background:#fff}
main{max-width:34rem;margin:0 auto}
h1{font-size:1.3rem;margin:0 0 1rem;white-space:pre-wrap;overflow-wrap:anywhere}
.options{display:flex;flex-direction:column;gap:.6rem;margin:1rem 0}
button{font:inherit;padding:.8rem 1rem;border:2px solid #1f4fa0;border-radius:.5rem;background:#1f4fa0;color:#fff;cursor:pointer;overflow-wrap:anywhere}
button:focus-visible{outline:3px solid #b35900;outline-offset:2px}
label{display:block;font-weight:600;margin-top:1rem}
textarea{box-sizing:border-box;width:100%;min-height:5rem;font:inherit;padding:.5rem;border:1px solid #555;border-radius:.4rem}
.note{color:#3d3d3d;font-size:.9rem}
.answer{font-size:1.2rem;font-weight:700;overflow-wrap:anywhere}
`;

/** The Content-Security-Policy of every callback page: its own style, a form to itself, nothing else. */
export const CALLBACK_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${hash('sha256', STYLE, 'base64')}'`,
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

function page(title: string, body: string): string {
  return htmlPage(
    `<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>`,
    `<main>
${body}
</main>`,
  );
}

/** The question with its buttons; posts to the page's own URL. */
export function questionPage(human: HumanQuestion): string {
  const buttons = human.options
    .map((option) => `<button type="submit" name="answer" value="${escapeHtml(option)}">${escapeHtml(option)}</button>`)
    .join('\n');
  const comment = human.allow_comment
    ? `<label for="comment">Comment (optional)</label>
<textarea id="comment" name="comment" maxlength="2000"></textarea>`
    : '';
  return page(
    'A question for you',
    `<h1>${escapeHtml(human.question)}</h1>
<form method="post">
${comment}
<div class="options" role="group" aria-label="Answers">
${buttons}
</div>
</form>
<p class="note">Choosing an answer sends it at once. Anyone with this link can answer, once.</p>`,
  );
}

/** What was recorded: this answer, or (`already`) the first one when it came earlier. */
export function answeredPage(
  human: HumanQuestion,
  answer: { answer: string; comment: string | null; answered_at: string } | null,
  already: boolean,
): string {
  if (!answer) return page('No longer open', `<h1>${escapeHtml(human.question)}</h1>\n<p>This question is closed.</p>`);
  const comment = answer.comment ? `<p>Comment:</p>\n<p class="answer">${escapeHtml(answer.comment)}</p>` : '';
  return page(
    already ? 'Already answered' : 'Answer recorded',
    `<h1>${escapeHtml(human.question)}</h1>
<p>${already ? 'This question was already answered:' : 'Thank you. Your answer was recorded:'}</p>
<p class="answer">${escapeHtml(answer.answer)}</p>
${comment}
<p class="note">Answered at ${escapeHtml(answer.answered_at)}.</p>`,
  );
}

/** A page for a callback that takes no more answers (expired or cancelled). */
export function closedPage(message: string): string {
  return page('No longer open', `<h1>This link is no longer open</h1>\n<p>${escapeHtml(message)}</p>`);
}
