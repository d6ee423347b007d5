// An email's HTML made inert before it reaches its sandboxed frame: DOMPurify removes
// scripts and handlers, and this configuration also removes everything that loads or
// navigates. The frame's sandbox and policy refuse such requests, but Chromium still opens a
// connection to the host named (preconnect, a clicked link), which tells the sender who read
// the mail and when; so no URL may reach the frame at all. Links stay readable as text.
import DOMPurify from 'dompurify';
import { visible } from './format';

// Elements whose whole purpose is to load, embed or send somewhere.
const LOADING_TAGS = [
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'portal',
  'fencedframe',
  'link',
  'meta',
  'base',
  'form',
  'area',
  'video',
  'audio',
  'source',
  'track',
];

// Attributes that hold a URL the browser may fetch, prefetch or navigate to.
const URL_ATTRIBUTES = new Set([
  'src',
  'href',
  'srcset',
  'imagesrcset',
  'background',
  'ping',
  'poster',
  'action',
  'formaction',
  'data',
  'codebase',
  'cite',
  'longdesc',
  'lowsrc',
  'dynsrc',
  'usemap',
  'manifest',
  'icon',
  'archive',
  'classid',
  'profile',
  'xlink:href',
  'attributionsrc',
]);

/** Images carried inside the message itself: the one kind of `src` kept. */
const INLINE_IMAGE = /^data:image\/(?:png|gif|jpeg|webp);base64,[a-z0-9+/=\s]*$/i;

// Without a backslash CSS cannot spell these by escapes, and without them it loads nothing.
const CSS_THAT_LOADS = /\\|url|image-set|image\(|element\(|src\(|@import|@font-face/i;

/** CSS with its url(…) values made `none`; undefined when it would still load something. */
function inertCss(css: string): string | undefined {
  if (!CSS_THAT_LOADS.test(css)) return css;
  const stripped = css.replace(/url\s*\([^)]*\)/gi, 'none');
  return CSS_THAT_LOADS.test(stripped) ? undefined : stripped;
}

const LONGEST_SHOWN_LINK = 300;

function makePurifier() {
  const purify = DOMPurify(window);
  purify.addHook('uponSanitizeElement', (node, event) => {
    if (event.tagName === 'style' && node.textContent) node.textContent = inertCss(node.textContent) ?? '';
  });
  // Before the href goes: the link's target becomes text after it, unless the text says it.
  purify.addHook('beforeSanitizeAttributes', (element) => {
    if (element.nodeName !== 'A') return;
    const href = element.getAttribute('href')?.trim();
    if (!href || element.textContent?.trim() === href) return;
    element.append(` ⟨${visible(href, LONGEST_SHOWN_LINK)}⟩`);
  });
  purify.addHook('uponSanitizeAttribute', (element, event) => {
    const name = event.attrName;
    if (URL_ATTRIBUTES.has(name)) {
      event.keepAttr = name === 'src' && element.nodeName === 'IMG' && INLINE_IMAGE.test(event.attrValue);
      event.forceKeepAttr = undefined;
    } else if (name === 'style') {
      const css = inertCss(event.attrValue);
      if (css === undefined) event.keepAttr = false;
      else event.attrValue = css;
    }
  });
  return purify;
}

let purifier: ReturnType<typeof makePurifier> | undefined;

/** The message's HTML as a whole document with nothing in it that runs, loads or navigates. */
export function sanitizeEmailHtml(html: string): string {
  purifier ??= makePurifier();
  return purifier.sanitize(html, {
    WHOLE_DOCUMENT: true,
    // HTML only: SVG and MathML bring their own ways to reference URLs.
    USE_PROFILES: { html: true },
    FORBID_TAGS: LOADING_TAGS,
    ALLOW_DATA_ATTR: false,
  });
}
