import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Param, Res } from '@nestjs/common';
import { Public } from '@skald/service-kit/public-route';
import { securePage } from '../web/web.controller';

/** The part of Express's response this controller uses. */
interface Response {
  status(code: number): this;
  type(type: string): this;
  setHeader(name: string, value: string): void;
  send(body: string | Buffer): void;
}

/** Where swagger-ui-dist's files are (the renderer is served from this origin, never from a CDN). */
function swaggerUiDir(): string {
  return dirname(require.resolve('swagger-ui-dist/package.json'));
}

/** The page: swagger-ui's stylesheet and bundle, and the script that starts it; no inline script or style. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Skald API</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/assets/contrast.css">
</head>
<body>
<main id="swagger-ui"></main>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/start.js"></script>
</body>
</html>
`;

/**
 * Starts swagger-ui on the document at /api/docs: no validator badge (it would load an image from
 * swagger.io), "Try it out" off until asked for, the token typed into "Authorize" kept for the page only.
 */
const START = `window.ui = SwaggerUIBundle({
  url: '/api/docs',
  dom_id: '#swagger-ui',
  // a deep link is an anchor inside the operation's toggle button (axe: nested-interactive)
  deepLinking: false,
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
  // the highlighting themes colour some tokens below AA contrast (axe: color-contrast)
  syntaxHighlight: { activated: false },
  presets: [SwaggerUIBundle.presets.apis],
});
`;

/**
 * swagger-ui's colours where its defaults are below WCAG AA contrast (axe: color-contrast): the
 * method badges, the version stamps, the document URL, the Authorize button, a parameter's "in"
 * and the JSON Schema constraint chips, darkened to 4.5:1 or more against their backgrounds.
 */
const CONTRAST = `body .swagger-ui .opblock .opblock-summary-method { color: #fff; text-shadow: none; }
body .swagger-ui .opblock.opblock-get .opblock-summary-method { background: #1565c0; }
body .swagger-ui .opblock.opblock-post .opblock-summary-method { background: #1b7a46; }
body .swagger-ui .opblock.opblock-put .opblock-summary-method { background: #9a5200; }
body .swagger-ui .opblock.opblock-patch .opblock-summary-method { background: #0f7566; }
body .swagger-ui .opblock.opblock-delete .opblock-summary-method { background: #b3261e; }
body .swagger-ui .info .title small { background: #4b5260; }
body .swagger-ui .info .title small.version-stamp { background: #1d632e; }
body .swagger-ui .info .url,
body .swagger-ui .info a { color: #1a5da6; }
body .swagger-ui .btn.authorize { border-color: #1b7a46; color: #1b7a46; }
body .swagger-ui .btn.authorize svg { color: #1b7a46; fill: #1b7a46; }
body .swagger-ui .parameter__in { color: #595959; }
body .swagger-ui .json-schema-2020-12__constraint--string { background: #8a5a00; color: #fff; }
body .swagger-ui .json-schema-2020-12-expand-deep-button { color: #595959; }
`;

/** The renderer's files this page loads, by the name it asks for. */
const ASSETS: Record<string, { type: string; file: () => string } | { type: string; text: string }> = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', file: () => join(swaggerUiDir(), 'swagger-ui.css') },
  'swagger-ui-bundle.js': {
    type: 'text/javascript; charset=utf-8',
    file: () => join(swaggerUiDir(), 'swagger-ui-bundle.js'),
  },
  'favicon-32x32.png': { type: 'image/png', file: () => join(swaggerUiDir(), 'favicon-32x32.png') },
  'contrast.css': { type: 'text/css; charset=utf-8', text: CONTRAST },
  'start.js': { type: 'text/javascript; charset=utf-8', text: START },
};

/**
 * The API document for people: swagger-ui (swagger-ui-dist) rendering /api/docs, served with the
 * web client's Content-Security-Policy unchanged. Public, like the document: it holds no user data.
 */
@Public()
@Controller('docs')
export class DocsController {
  private readonly files = new Map<string, Buffer>();

  @Get()
  page(@Res() res: Response): void {
    securePage(res);
    res.setHeader('cache-control', 'no-cache');
    res.type('text/html; charset=utf-8').send(PAGE);
  }

  @Get('assets/:file')
  asset(@Param('file') name: string, @Res() res: Response): void {
    securePage(res);
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    const body = !asset ? null : 'text' in asset ? asset.text : this.read(asset.file());
    if (!asset || body === null) {
      res.status(404).type('text/plain').send('not found');
      return;
    }
    res.setHeader('cache-control', 'no-cache');
    res.type(asset.type).send(body);
  }

  /** A file of the renderer, read once. */
  private read(file: string): Buffer | null {
    const cached = this.files.get(file);
    if (cached) return cached;
    if (!existsSync(file)) return null;
    const body = readFileSync(file);
    this.files.set(file, body);
    return body;
  }
}
