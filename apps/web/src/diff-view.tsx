import { lineDiff } from './diff';

/** A line diff of two texts: removed lines struck, added lines marked. */
export function Diff({ oldText, newText }: { oldText: string; newText: string }) {
  const lines = lineDiff(oldText, newText);
  return (
    <pre className="diff" aria-label="proposed change">
      {lines.map((l, n) => (
        <div key={n} className={l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same'}>
          <span aria-hidden="true">{l.op} </span>
          {l.op === '+' ? <ins>{l.text}</ins> : l.op === '-' ? <del>{l.text}</del> : l.text}
        </div>
      ))}
    </pre>
  );
}
