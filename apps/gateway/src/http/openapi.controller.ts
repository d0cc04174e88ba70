import { Controller, Get } from '@nestjs/common';
import { Public } from '../auth/auth.guard';
import { buildOpenApiDocument } from './openapi';

@Controller('api')
export class OpenApiController {
  private readonly doc = buildOpenApiDocument();

  /** The REST contract as an OpenAPI 3.1 document, generated from the zod schemas in contracts. */
  @Public()
  @Get('docs')
  docs(): unknown {
    return this.doc;
  }
}
