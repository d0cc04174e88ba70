import { z } from 'zod';
import { BaseConfigSchema } from '@skald/service-kit';

export const GatewayConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  /** HS256 key for session JWTs (≥ 32 chars). Every gateway replica needs the same one. */
  SKALD_JWT_SECRET: z.string().min(32, 'SKALD_JWT_SECRET must be at least 32 characters'),
  SKALD_TOKEN_TTL_SECS: z.coerce
    .number()
    .int()
    .min(60)
    .default(12 * 3600),
  SKALD_ADMIN_EMAIL: z.string().email().optional(),
  SKALD_ADMIN_PASSWORD: z.string().min(8, 'SKALD_ADMIN_PASSWORD must be at least 8 characters').optional(),
  /** Comma-separated origins allowed to open a WebSocket from a browser (default: the gateway's own). */
  SKALD_ALLOWED_ORIGINS: z.string().optional(),
  /** Public base URL, e.g. https://skald.example.com (default http://HOST:PORT). */
  SKALD_PUBLIC_URL: z.string().url().optional(),
});
export type GatewayConfig = z.infer<typeof GatewayConfigSchema>;

export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
