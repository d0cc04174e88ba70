import { Box, render, Text, useApp, useInput } from 'ink';
import TextInput from 'ink-text-input';
import { createElement as h, useState, type ReactElement } from 'react';
import { CliError, EXIT } from './errors.ts';

export interface Field {
  label: string;
  initial?: string;
  /** A secret: shown as `*`, never echoed. */
  secret?: boolean;
}

function Form({ fields, done }: { fields: Field[]; done: (answers: string[] | null) => void }): ReactElement {
  const { exit } = useApp();
  const [at, setAt] = useState(0);
  const [answers, setAnswers] = useState<string[]>([]);
  const [value, setValue] = useState(fields[0]?.initial ?? '');
  useInput((ch, key) => {
    if (key.ctrl && ch === 'c') {
      done(null);
      exit();
    }
  });
  const submit = (v: string) => {
    if (!v.trim()) return;
    const next = [...answers, v];
    if (next.length === fields.length) {
      done(next);
      exit();
      return;
    }
    setAnswers(next);
    setAt(at + 1);
    setValue(fields[at + 1]?.initial ?? '');
  };
  return h(
    Box,
    { flexDirection: 'column' },
    ...fields
      .slice(0, at)
      .map((f, i) =>
        h(Text, { key: i }, h(Text, { dimColor: true }, `${f.label}: `), f.secret ? '••••••' : answers[i]),
      ),
    h(
      Box,
      null,
      h(Text, { bold: true }, `${fields[at].label}: `),
      h(TextInput, { value, onChange: setValue, onSubmit: submit, ...(fields[at].secret ? { mask: '*' } : {}) }),
    ),
  );
}

/** Asks for the fields one after another in the terminal; null when the user pressed Ctrl-C. */
export async function ask(fields: Field[]): Promise<string[]> {
  if (!process.stdin.isTTY)
    throw new CliError(
      `${fields[0].label.toLowerCase()} is needed and stdin is not a terminal: give it as an option`,
      EXIT.usage,
    );
  let result: string[] | null = null;
  const app = render(h(Form, { fields, done: (a) => (result = a) }), { exitOnCtrlC: false });
  await app.waitUntilExit();
  if (result === null) throw new CliError('cancelled', EXIT.interrupted);
  return result;
}
