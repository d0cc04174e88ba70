import { useCallback, useEffect, useState } from 'react';
import type { LlmClientList, SlashCommand } from '@skald/contracts';
import type { Api, Outgoing } from '../api';
import type { ServerFrame } from '@skald/contracts';

/**
 * The model of this conversation, chosen in the composer: AUTO first, then the user's LLM clients
 * with their health. Choosing sends `select_client`, exactly what `/model` does; the server
 * remembers it for the conversation, so reopening one brings its model back.
 */
export function ModelPicker({
  api,
  source,
  send,
  subscribe,
  imagesAttached = false,
}: {
  api: Api;
  source: string;
  send: (f: Outgoing) => boolean;
  subscribe: (on: (f: ServerFrame) => void) => () => void;
  /** The draft carries images: a model that cannot see them says so in words, not only a tag. */
  imagesAttached?: boolean;
}) {
  const [list, setList] = useState<LlmClientList | null>(null);
  const load = useCallback(() => {
    api.get<LlmClientList>(`/api/llm/clients?source=${encodeURIComponent(source)}`).then(setList, () => undefined);
  }, [api, source]);
  useEffect(load, [load]);
  useEffect(
    () =>
      subscribe((f) => {
        if (
          f.type === 'client_selected' ||
          f.type === 'new_session' ||
          (f.type === 'command_result' &&
            (f.command === ('/model' satisfies SlashCommand) || f.command === ('/new' satisfies SlashCommand)))
        )
          load();
      }),
    [subscribe, load],
  );
  const picker = <ModelSelect list={list} setList={setList} send={send} />;
  const hint = list ? visionHint(list) : null;
  return (
    <>
      {picker}
      {hint ? (
        <span className={`vision-hint ${hint.sees}`} title={hint.title} role="status">
          {imagesAttached && hint.sees !== 'yes' ? hint.title : hint.text}
        </span>
      ) : null}
    </>
  );
}

/**
 * Whether the model of the conversation can see images (attachments, `read_file` of an image):
 * the pinned client's `vision`, or for AUTO whether every, none or some of the clients can.
 */
function visionHint(list: LlmClientList): { sees: 'yes' | 'no' | 'maybe'; text: string; title: string } {
  const pinned = list.pinned ? list.items.find((c) => c.name === list.pinned) : undefined;
  const clients = pinned ? [pinned] : list.items;
  const seeing = clients.filter((c) => c.vision).length;
  if (clients.length > 0 && seeing === clients.length)
    return { sees: 'yes', text: 'Sees images', title: 'The model is shown attached images and images it reads.' };
  if (seeing === 0)
    return {
      sees: 'no',
      text: 'Cannot see images',
      title: 'The model cannot see images: it is told only the paths of attached images.',
    };
  return {
    sees: 'maybe',
    text: 'May not see images',
    title: 'AUTO may pick a model that cannot see images; choose one that can to be sure.',
  };
}

function ModelSelect({
  list,
  setList,
  send,
}: {
  list: LlmClientList | null;
  setList: (update: (l: LlmClientList | null) => LlmClientList | null) => void;
  send: (f: Outgoing) => boolean;
}) {
  return (
    <label className="model-picker">
      <span className="sr-only">Model</span>
      <select
        aria-label="Model"
        value={list?.pinned ?? 'auto'}
        disabled={!list}
        onChange={(e) => {
          const client = e.target.value;
          if (send({ type: 'select_client', client }))
            setList((l) => (l ? { ...l, pinned: client === 'auto' ? null : client } : l));
        }}
      >
        <option value="auto">AUTO (best available)</option>
        {(list?.items ?? []).map((c) => (
          <option key={c.name} value={c.name}>
            {c.name} · {c.model}
            {c.health === 'healthy' ? '' : ` (${c.health})`}
          </option>
        ))}
      </select>
    </label>
  );
}
