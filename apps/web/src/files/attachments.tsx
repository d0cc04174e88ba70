import { useCallback, useEffect, useRef, useState } from 'react';
import { errorText, type Api } from '../api';
import { fetchFile, uploadFile, type Attachment } from './files-api';
import { highlight } from './highlight';
import './files.css';

interface Pending {
  id: string;
  name: string;
  size: number;
  state: 'uploading' | 'done' | 'failed';
  attachment?: Attachment;
  error?: string;
}

/** Files at most this large are shown as text in the viewer (and highlighted). */
const VIEW_TEXT_MAX = 512 * 1024;
/** Files one drop or paste may add. */
const MAX_FILES_AT_ONCE = 20;

export function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The composer's attachments: each file is uploaded as soon as it is chosen, dropped or pasted,
 * and the message carries those that finished.
 */
export function useAttachments(api: Api, source: string) {
  const [pending, setPending] = useState<Pending[]>([]);
  const add = useCallback(
    (files: Iterable<File>) => {
      for (const file of [...files].slice(0, MAX_FILES_AT_ONCE)) {
        const id = crypto.randomUUID();
        setPending((p) => [...p, { id, name: file.name || 'pasted', size: file.size, state: 'uploading' }]);
        uploadFile(api, source, file).then(
          (attachment) =>
            setPending((p) =>
              p.map((x) => (x.id === id ? { ...x, state: 'done', attachment, name: attachment.name } : x)),
            ),
          (e: unknown) =>
            setPending((p) => p.map((x) => (x.id === id ? { ...x, state: 'failed', error: errorText(e) } : x))),
        );
      }
    },
    [api, source],
  );
  const remove = useCallback((id: string) => setPending((p) => p.filter((x) => x.id !== id)), []);
  const clear = useCallback(() => setPending([]), []);
  const ready = pending.flatMap((p) => (p.attachment ? [p.attachment] : []));
  const uploading = pending.some((p) => p.state === 'uploading');
  return { pending, ready, uploading, add, remove, clear };
}
export type Attachments = ReturnType<typeof useAttachments>;

/** The paperclip: opens the file picker. */
export function AttachButton({ onFiles }: { onFiles: (files: FileList) => void }) {
  const input = useRef<HTMLInputElement | null>(null);
  return (
    <>
      <input
        ref={input}
        type="file"
        multiple
        hidden
        aria-label="Files to attach"
        onChange={(e) => {
          if (e.target.files) onFiles(e.target.files);
          e.target.value = '';
        }}
      />
      <button
        type="button"
        className="attach"
        aria-label="Attach files"
        title="Attach files"
        onClick={() => input.current?.click()}
      >
        {/* A drawn paperclip, not the emoji: a machine without an emoji font showed a missing-glyph box. */}
        <svg
          aria-hidden="true"
          width="18"
          height="18"
          viewBox="0 0 24 24"
          fill="none"
          stroke="currentColor"
          strokeWidth="2"
        >
          <path d="M21 11.5l-8.5 8.5a5 5 0 0 1-7-7L14 4.5a3.3 3.3 0 0 1 4.7 4.7L10.2 17.7a1.7 1.7 0 0 1-2.4-2.4L15.5 7.6" />
        </svg>
      </button>
    </>
  );
}

/** The composer's attachments, each with its state and a way to drop it. */
export function PendingChips({ at }: { at: Attachments }) {
  if (at.pending.length === 0) return null;
  return (
    <ul className="chips pending" aria-label="attachments">
      {at.pending.map((p) => (
        <li key={p.id} className={`chip ${p.state}`}>
          <span className="chip-name">{p.name}</span>{' '}
          <span className="chip-meta">
            {p.state === 'uploading' ? 'uploading…' : p.state === 'failed' ? `failed: ${p.error}` : formatSize(p.size)}
          </span>
          <button type="button" className="chip-remove" aria-label={`Remove ${p.name}`} onClick={() => at.remove(p.id)}>
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Image types a message shows as a thumbnail (those a vision model is given). */
const THUMBNAIL_TYPES = /^image\/(png|jpeg|webp|gif)$/;
const THUMBNAIL_NAMES = /\.(png|jpe?g|webp|gif)$/i;
/** Images larger than this are not fetched for a thumbnail (the chip still opens them). */
const THUMBNAIL_MAX_BYTES = 10 * 1024 * 1024;

function isThumbnailed(a: Attachment): boolean {
  const typed = a.mimetype ? THUMBNAIL_TYPES.test(a.mimetype) : THUMBNAIL_NAMES.test(a.path);
  return typed && (a.filesize === undefined || a.filesize <= THUMBNAIL_MAX_BYTES);
}

/** A workspace image as a small picture (fetched with the user's token; freed when it leaves). */
function Thumbnail({ api, attachment }: { api: Api; attachment: Attachment }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    let made: string | null = null;
    fetchFile(api, attachment.path).then(
      (blob) => {
        if (!live || !blob.type.startsWith('image/')) return;
        made = URL.createObjectURL(blob);
        setUrl(made);
      },
      () => undefined,
    );
    return () => {
      live = false;
      if (made) URL.revokeObjectURL(made);
    };
  }, [api, attachment.path]);
  if (!url) return <span className="thumbnail placeholder" aria-hidden="true" />;
  return <img className="thumbnail" src={url} alt={attachment.name} loading="lazy" />;
}

/** A message's attachments; each opens in the viewer. Images show a thumbnail when `api` is given. */
export function AttachmentChips({
  attachments,
  onOpen,
  api,
}: {
  attachments: Attachment[];
  onOpen: (path: string) => void;
  api?: Api;
}) {
  if (attachments.length === 0) return null;
  return (
    <ul className="chips" aria-label="attached files">
      {attachments.map((a) =>
        api && isThumbnailed(a) ? (
          <li key={a.path} className="chip image">
            <button type="button" className="chip-open thumb-open" onClick={() => onOpen(a.path)} title={a.path}>
              <Thumbnail api={api} attachment={a} />
              <span className="chip-name">{a.name}</span>
            </button>
          </li>
        ) : (
          <li key={a.path} className="chip">
            <button type="button" className="chip-open" onClick={() => onOpen(a.path)} title={a.path}>
              <svg className="chip-icon" aria-hidden="true" viewBox="0 0 16 16" width="14" height="14">
                <path
                  d="M4 1.5h5l3.5 3.5v9.5h-8.5z M9 1.5v3.5h3.5"
                  fill="none"
                  stroke="currentColor"
                  strokeWidth="1.2"
                />
              </svg>{' '}
              {a.name}
              {a.filesize !== undefined ? <span className="chip-meta"> {formatSize(a.filesize)}</span> : null}
            </button>
          </li>
        ),
      )}
    </ul>
  );
}

/** Drag-and-drop onto an element: files dropped are added; `dragging` while something hovers. */
export function useFileDrop(onFiles: (files: FileList) => void) {
  const [dragging, setDragging] = useState(false);
  const depth = useRef(0);
  const hasFiles = (e: React.DragEvent) => [...e.dataTransfer.types].includes('Files');
  return {
    dragging,
    props: {
      onDragEnter: (e: React.DragEvent) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        depth.current++;
        setDragging(true);
      },
      onDragOver: (e: React.DragEvent) => {
        if (hasFiles(e)) e.preventDefault();
      },
      onDragLeave: () => {
        depth.current = Math.max(0, depth.current - 1);
        if (depth.current === 0) setDragging(false);
      },
      onDrop: (e: React.DragEvent) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        depth.current = 0;
        setDragging(false);
        onFiles(e.dataTransfer.files);
      },
    },
  };
}

/** Files pasted into the composer (screenshots, copied files); text pastes are left alone. */
export function pastedFiles(e: React.ClipboardEvent): File[] {
  return [...e.clipboardData.files];
}

type View =
  | { kind: 'loading' }
  | { kind: 'text'; html: string; truncated: boolean }
  | { kind: 'image'; url: string }
  | { kind: 'other'; url: string; type: string; size: number }
  | { kind: 'error'; message: string };

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|x-sh|x-yaml|yaml|toml|x-python))/;

/**
 * A workspace file in a dialog (from a chip or an `open_file` event): text highlighted, images
 * shown, anything else offered as a download. Escape or the close button ends it.
 */
export function FileViewer({ api, path, onClose }: { api: Api; path: string; onClose: () => void }) {
  const [view, setView] = useState<View>({ kind: 'loading' });
  const close = useRef<HTMLButtonElement | null>(null);
  const name = path.split('/').pop() || path;
  useEffect(() => {
    let live = true;
    let url: string | null = null;
    setView({ kind: 'loading' });
    void (async () => {
      try {
        const blob = await fetchFile(api, path);
        const type = blob.type.split(';')[0] ?? '';
        const image = /^image\/(png|jpeg|gif|webp|avif)$/.test(type);
        // by content, not only by type: `.ts` is video/mp2t to the MIME database, and source code to a user
        if (TEXTUAL.test(type) || (!image && (await looksText(blob)))) {
          const text = await blob.slice(0, VIEW_TEXT_MAX).text();
          const html = await highlight(text, name);
          if (live) setView({ kind: 'text', html, truncated: blob.size > VIEW_TEXT_MAX });
        } else if (image) {
          url = URL.createObjectURL(blob);
          if (live) setView({ kind: 'image', url });
        } else {
          url = URL.createObjectURL(blob);
          if (live) setView({ kind: 'other', url, type, size: blob.size });
        }
      } catch (e) {
        if (live) setView({ kind: 'error', message: errorText(e) });
      }
    })();
    return () => {
      live = false;
      if (url) URL.revokeObjectURL(url);
    };
  }, [api, path, name]);
  useEffect(() => {
    close.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <div className="viewer-backdrop" onClick={onClose}>
      <div
        className="viewer"
        role="dialog"
        aria-modal="true"
        aria-label={`File ${path}`}
        onClick={(e) => e.stopPropagation()}
      >
        <header className="viewer-head">
          <h2>{path}</h2>
          <button ref={close} type="button" onClick={onClose}>
            Close
          </button>
        </header>
        {view.kind === 'loading' ? (
          <p role="status">loading…</p>
        ) : view.kind === 'error' ? (
          <p role="alert">{view.message}</p>
        ) : view.kind === 'text' ? (
          <>
            {/* highlight.js escapes the text; the only markup is its own spans. */}
            <pre className="viewer-code" tabIndex={0} aria-label="file content">
              <code className="hljs" dangerouslySetInnerHTML={{ __html: view.html }} />
            </pre>
            {view.truncated ? <p className="muted">Only the first {formatSize(VIEW_TEXT_MAX)} are shown.</p> : null}
          </>
        ) : view.kind === 'image' ? (
          <img className="viewer-image" src={view.url} alt={name} />
        ) : (
          <p>
            {view.type || 'binary'} file, {formatSize(view.size)}.{' '}
            <a href={view.url} download={name}>
              Download {name}
            </a>
          </p>
        )}
      </div>
    </div>
  );
}

async function looksText(blob: Blob): Promise<boolean> {
  const head = new Uint8Array(await blob.slice(0, 4096).arrayBuffer());
  return !head.includes(0);
}
