// The events, newest first, one button each; every row carries data-sequence. Arrow keys
// (and j/k) move through the list, Enter opens the focused event.
import type { RoostEvent } from './types';
import { eventSize, formatBytes, formatTime, visible } from './format';
import { preview } from './preview';

interface Props {
  events: RoostEvent[];
  selected?: number;
  onSelect: (sequence: number) => void;
}

function moveFocus(event: KeyboardEvent): void {
  const step =
    event.key === 'ArrowDown' || event.key === 'j' ? 1 : event.key === 'ArrowUp' || event.key === 'k' ? -1 : 0;
  if (step === 0) return;
  const buttons = Array.from((event.currentTarget as HTMLElement).querySelectorAll<HTMLButtonElement>('button.event'));
  const index = buttons.indexOf(document.activeElement as HTMLButtonElement);
  const next = buttons[Math.max(0, Math.min(buttons.length - 1, index + step))];
  if (next) {
    event.preventDefault();
    next.focus();
  }
}

const previews = new WeakMap<RoostEvent, string>();
function previewOf(event: RoostEvent): string {
  let text = previews.get(event);
  if (text === undefined) {
    text = visible(preview(event), 200);
    previews.set(event, text);
  }
  return text;
}

export function EventList({ events, selected, onSelect }: Props) {
  return (
    <ol class="events" aria-label="Events, newest first" onKeyDown={moveFocus}>
      {events.map((event) => (
        <li key={event.sequence} data-sequence={event.sequence}>
          <button
            type="button"
            class={`event${event.sequence === selected ? ' selected' : ''}`}
            aria-current={event.sequence === selected ? 'true' : undefined}
            onClick={() => onSelect(event.sequence)}
          >
            <span class="seq">#{event.sequence}</span>
            <span class="type">{visible(event.type, 120)}</span>
            <span class={`badge ${event.acknowledged_at ? 'acked' : 'new'}`}>
              {event.acknowledged_at ? 'acked' : 'new'}
            </span>
            {previewOf(event) && <span class="preview">{previewOf(event)}</span>}
            <span class="meta">
              <span class="source">{visible(event.source, 60)}</span>
              <time dateTime={event.created_at}>{formatTime(event.created_at)}</time>
              <span class="size">{formatBytes(eventSize(event))}</span>
            </span>
          </button>
        </li>
      ))}
    </ol>
  );
}
