import { Body, Controller, Headers, Res } from '@nestjs/common';
import {
  Actor,
  OPENAI_CONVERSATION_HEADER,
  OPENAI_IDEMPOTENCY_HEADER,
  OPENAI_RETRY_COUNT_HEADER,
  ROUTES,
} from '@skald/contracts';
import { Route } from '../http/route.decorator';
import { CurrentActor, CurrentPrincipal } from '../auth/actor.decorator';
import type { Principal } from '../auth/auth.service';
import { ChatCompletionsService, parseChatRequest } from './chat-completions.service';
import { writeAnswer, type AnswerResponse } from './answer-writer';

/**
 * The OpenAI-compatible endpoint: `GET /v1/models` (the agents the caller may use) and
 * `POST /v1/chat/completions` (streamed or not). Bearer auth as every route; errors in OpenAI's
 * shape (the error filter, by path).
 */
@Controller()
export class OpenAiController {
  constructor(private readonly chat: ChatCompletionsService) {}

  @Route(ROUTES.listModels)
  async models(@CurrentActor() actor: Actor) {
    return { object: 'list', data: await this.chat.models(actor) };
  }

  @Route(ROUTES.createChatCompletion)
  async completions(
    @CurrentPrincipal() principal: Principal,
    @Body() body: unknown,
    @Headers(OPENAI_CONVERSATION_HEADER) conversation: string | undefined,
    @Headers(OPENAI_IDEMPOTENCY_HEADER) idempotencyKey: string | undefined,
    @Headers(OPENAI_RETRY_COUNT_HEADER) retryCount: string | undefined,
    @Res() res: AnswerResponse,
  ): Promise<void> {
    const request = parseChatRequest(body);
    // A client that goes away stops the turn, as the WS `cancel` does.
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const running = await this.chat.start(
      principal,
      request,
      { conversation, idempotencyKey, retryCount },
      gone.signal,
    );
    await writeAnswer(request, running, res, gone.signal);
  }
}
