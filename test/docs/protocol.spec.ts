// docs/protocol.md's wire reference is generated from the schemas the gateway validates with and from its route
// table (scripts/gen-protocol-reference.js). This renders it from the sources and compares it with the page, so a
// new frame, event, field or route shows up as a failure until the page is regenerated; and checks that the
// rendering really lists every one of them (the generator cannot silently skip a kind).
import { readFileSync } from 'node:fs';
import {
  CLIENT_FRAME_TYPES,
  CONNECTION_EVENT_TYPES,
  ClientFrame,
  EphemeralEventSchema,
  SESSION_EVENT_TYPES,
  SessionEventBodies,
  ROUTES,
  UserEventSchema,
} from '../../libs/contracts/src';

interface Generator {
  PROTOCOL_MD: string;
  renderReference(c: unknown): string;
  expectedDocument(markdown: string, section: string): string;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../scripts/gen-protocol-reference.js') as Generator;

const section = generator.renderReference({
  clientFrames: ClientFrame,
  sessionEvents: SessionEventBodies,
  ephemeralEvents: EphemeralEventSchema,
  userEvents: UserEventSchema,
  connectionEvents: CONNECTION_EVENT_TYPES,
  routes: ROUTES,
});

describe('docs/protocol.md: the wire reference', () => {
  it('is what the generator makes of the current schemas and routes', () => {
    const page = readFileSync(generator.PROTOCOL_MD, 'utf8');
    expect(generator.expectedDocument(page, section)).toBe(page);
  });

  it('names every client frame, every event type and every route', () => {
    const userEvents = UserEventSchema.options.map((o) => o.shape.type.value);
    const ephemeral = EphemeralEventSchema.options.map((o) => o.shape.type.value);
    for (const t of [
      ...CLIENT_FRAME_TYPES,
      ...SESSION_EVENT_TYPES,
      ...userEvents,
      ...ephemeral,
      ...CONNECTION_EVENT_TYPES,
    ])
      expect(section).toContain(`\`${t}\``);
    for (const [id, r] of Object.entries(ROUTES))
      expect(section).toContain(`| ${r.method.toUpperCase()} | \`${r.path}\` | \`${id}\` | ${r.auth} |`);
  });

  it('marks optional fields and lists every field of a frame', () => {
    // The edit frame: three required fields; the message frame: attachments and delivery may be left out.
    expect(section).toMatch(/\| `edit` \| `message_id`, `content`, `client_message_id` \|/);
    expect(section).toMatch(/\| `message` \| `client_message_id`, `content`, `attachments\?`, `delivery\?` \|/);
  });
});
