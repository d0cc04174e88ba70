import { useCallback, useEffect, useState } from 'react';
import type { Role } from '@skald/contracts';
import { errorText } from './api';

/** A tool the approval service has seen offered (`GET /api/approval/tools`). */
export interface KnownTool {
  name: string;
  category: string;
  origin: string;
}

/** A user as `GET /api/admin/users` lists them. */
export interface AdminUser {
  id: string;
  email: string;
  role: Role;
  disabled: boolean;
}

/** Loads once and on `reload`: the value, an error text, reload, and a setter of the error. */
export function useLoad<T>(load: () => Promise<T>): [T | null, string, () => void, (e: unknown) => void] {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState('');
  const fail = useCallback((e: unknown) => setError(errorText(e)), []);
  const reload = useCallback(() => {
    load().then((d) => {
      setData(d);
      setError('');
    }, fail);
  }, [load, fail]);
  useEffect(reload, [reload]);
  return [data, error, reload, fail];
}
