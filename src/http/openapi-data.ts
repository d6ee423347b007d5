// The shapes of `data` that Roost itself writes (raw capture, email), in the OpenAPI document
// only: each Event's `data` there offers them as alternatives beside any JSON value. Kept out
// of the route schemas on purpose: those also serialise responses, and a union there would
// be tried alternative by alternative on every delivery.
import { EmailDataSchema, RawCaptureDataSchema } from '../schemas.js';

type Node = { [key: string]: unknown };

/** As plain JSON: TypeBox's own markers stay out of the document. */
const COMPONENTS = JSON.parse(
  JSON.stringify({ RawCaptureData: RawCaptureDataSchema, EmailData: EmailDataSchema }),
) as Node;

const DATA_SHAPES = [
  { $ref: '#/components/schemas/RawCaptureData' },
  { $ref: '#/components/schemas/EmailData' },
  { description: 'Any other JSON value: what the sender put in data.' },
];

/**
 * Returns `document` with the shapes among its components, and every Event schema's `data`
 * (an object with `sequence` and `data`) pointing at them.
 */
export function withDataShapes(document: Node): Node {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const out: Node = {};
    for (const [key, value] of Object.entries(node)) out[key] = visit(value);
    const properties = out.properties as Node | undefined;
    if (properties && typeof properties.data === 'object' && properties.sequence !== undefined)
      out.properties = { ...properties, data: { ...(properties.data as Node), anyOf: DATA_SHAPES } };
    return out;
  };
  const out = visit(document) as Node;
  const components = (out.components ?? {}) as Node;
  out.components = { ...components, schemas: { ...((components.schemas ?? {}) as Node), ...COMPONENTS } };
  return out;
}
