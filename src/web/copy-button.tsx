// A button that copies a text to the clipboard and says so.
import { useState } from 'preact/hooks';

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [said, setSaid] = useState<string | undefined>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied');
    } catch {
      setSaid('Copy failed');
    }
    window.setTimeout(() => setSaid(undefined), 1500);
  };
  return (
    <button type="button" class="small" onClick={() => void copy()}>
      {said ?? label}
    </button>
  );
}
