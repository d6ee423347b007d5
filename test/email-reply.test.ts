// data.reply_text on replies as real mail clients write them: the new part only, without
// the quoted history and the signature. Parsed by the same code the worker runs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseEmail } from '../src/smtp/parse.js';

const LIMITS = { maxTextBytes: 256 * 1024, maxHtmlBytes: 256 * 1024 };

async function replyText(body: string): Promise<string | null> {
  const raw = Buffer.from(
    `From: a@example.org\r\nTo: b@example.org\r\nSubject: Re: deploy?\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body.replace(/\n/g, '\r\n')}`,
  );
  return (await parseEmail(raw, LIMITS)).data.reply_text;
}

describe('reply_text', () => {
  test('Gmail: "On … wrote:" and > quoting', async () => {
    const text = await replyText(
      'Yes, ship it.\n\nOn Mon, Nov 23, 2026 at 9:30 AM Deploy Bot <bot@roost.test> wrote:\n> Shall I deploy build 42?\n> Reply yes or no.\n',
    );
    assert.equal(text, 'Yes, ship it.');
  });

  test('Gmail with the "wrote:" line wrapped over two lines', async () => {
    const text = await replyText(
      'Approved.\n\nOn Mon, Nov 23, 2026 at 9:30 AM Deploy Bot <\nbot@roost.test> wrote:\n\n> Shall I deploy build 42?\n',
    );
    assert.equal(text, 'Approved.');
  });

  test('Outlook: the original message below a From:/Sent: block', async () => {
    const text = await replyText(
      'No, wait until Monday.\n\nFrom: Deploy Bot <bot@roost.test>\nSent: Monday, November 23, 2026 9:30 AM\nTo: Alice <a@example.org>\nSubject: deploy?\n\nShall I deploy build 42?\n',
    );
    assert.equal(text, 'No, wait until Monday.');
  });

  test('Outlook: "-----Original Message-----"', async () => {
    const text = await replyText(
      'Go ahead.\n\n-----Original Message-----\nFrom: Deploy Bot\nSent: Monday\nSubject: deploy?\n\nShall I deploy build 42?\n',
    );
    assert.equal(text, 'Go ahead.');
  });

  test('Apple Mail: "On … at …, … wrote:" and a "Sent from my iPhone" signature', async () => {
    const text = await replyText(
      'Yes\n\nSent from my iPhone\n\n> On 23 Nov 2026, at 09:30, Deploy Bot <bot@roost.test> wrote:\n>\n> Shall I deploy build 42?\n',
    );
    assert.equal(text, 'Yes');
  });

  test('a "-- " signature is removed', async () => {
    const text = await replyText('Sounds good.\n\n-- \nAlice Example\nHead of Ops\n');
    assert.equal(text, 'Sounds good.');
  });

  test('French, German and Spanish "wrote" lines', async () => {
    assert.equal(
      await replyText(
        'Oui, vas-y.\n\nLe lun. 23 nov. 2026 à 09:30, Deploy Bot <bot@roost.test> a écrit :\n> On déploie ?\n',
      ),
      'Oui, vas-y.',
    );
    assert.equal(
      await replyText(
        'Ja, bitte.\n\nAm Mo., 23. Nov. 2026 um 09:30 Uhr schrieb Deploy Bot <bot@roost.test>:\n> Deployen?\n',
      ),
      'Ja, bitte.',
    );
    assert.equal(
      await replyText(
        'Sí, adelante.\n\nEl lun, 23 nov 2026 a las 9:30, Deploy Bot (<bot@roost.test>) escribió:\n> ¿Despliego?\n',
      ),
      'Sí, adelante.',
    );
  });

  test('bottom posting: the quoted question first, the answer below it', async () => {
    const text = await replyText(
      'On Mon, Nov 23, 2026 at 9:30 AM Deploy Bot <bot@roost.test> wrote:\n> Shall I deploy build 42?\n\nYes, deploy it.\n',
    );
    assert.match(text ?? '', /Yes, deploy it\./);
    assert.doesNotMatch(text ?? '', /Shall I deploy/);
  });

  test('a message that is not a reply is its own reply_text', async () => {
    assert.equal(await replyText('Your code is 482913.\n'), 'Your code is 482913.');
  });
});
