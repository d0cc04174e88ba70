import { Controller } from '@nestjs/common';
import { ROUTES } from '@skald/contracts';
import { buildOpenApiDocument } from './openapi';
import { Route } from './route.decorator';

@Controller()
export class OpenApiController {
  private doc: unknown = null;

  /** The REST contract as an OpenAPI 3.1 document, generated from the route table (made on the first request). */
  @Route(ROUTES.getOpenApiDocument)
  docs(): unknown {
    return (this.doc ??= buildOpenApiDocument());
  }
}
