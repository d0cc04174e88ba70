import type { SimChatRequest, SimWireMessage } from './sim-types';

/**
 * Strict validation of a chat-completions request, modelled on what OpenAI answers with 400: a
 * wrong projection of history into wire messages must fail a test here, not in production.
 */

export interface SimValidationError {
  message: string;
  param: string | null;
}

export type SimValidationResult = { ok: true; request: SimChatRequest } | { ok: false; error: SimValidationError };

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const USER_PART_TYPES = new Set(['text', 'image_url', 'input_audio', 'file']);
/** Fields a message of each role may have: anything else is a 400, as OpenAI answers it. */
const MESSAGE_FIELDS: Record<string, Set<string>> = {
  system: new Set(['role', 'content', 'name']),
  developer: new Set(['role', 'content', 'name']),
  user: new Set(['role', 'content', 'name']),
  assistant: new Set(['role', 'content', 'name', 'tool_calls', 'refusal', 'audio', 'function_call']),
  tool: new Set(['role', 'content', 'tool_call_id']),
};
/** A text part may carry `cache_control` (the prompt-caching extension of the providers that take it). */
const TEXT_PART_FIELDS = new Set(['type', 'text', 'cache_control']);

class Invalid extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

export function validateChatRequest(body: unknown): SimValidationResult {
  try {
    return { ok: true, request: checkRequest(body) };
  } catch (err) {
    if (err instanceof Invalid) return { ok: false, error: { message: err.message, param: err.param } };
    throw err;
  }
}

function checkRequest(body: unknown): SimChatRequest {
  if (!isObject(body)) throw new Invalid('The request body must be a JSON object.', null);
  if (typeof body.model !== 'string' || body.model.trim() === '') {
    throw new Invalid("you must provide a model parameter (a non-empty string in 'model').", 'model');
  }
  if (!Array.isArray(body.messages)) {
    throw new Invalid("Missing required parameter: 'messages' (an array).", 'messages');
  }
  if (body.messages.length === 0) {
    throw new Invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.", 'messages');
  }
  checkScalars(body);
  const toolNames = checkTools(body.tools);
  checkToolChoice(body.tool_choice, toolNames);
  body.messages.forEach((message, i) => checkMessage(message, i));
  checkToolCallPairing(body.messages as SimWireMessage[]);
  return body as SimChatRequest;
}

function checkScalars(body: Record<string, unknown>): void {
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw new Invalid(`Invalid type for 'stream': expected a boolean, but got ${describe(body.stream)}.`, 'stream');
  }
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (body.stream !== true) {
      throw new Invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
    }
    if (!isObject(body.stream_options)) {
      throw new Invalid("Invalid type for 'stream_options': expected an object.", 'stream_options');
    }
  }
  checkNumber(body, 'temperature', 0, 2);
  checkNumber(body, 'top_p', 0, 1);
  for (const key of ['max_tokens', 'max_completion_tokens']) {
    const value = body[key];
    if (value !== undefined && value !== null && !(Number.isInteger(value) && (value as number) >= 1)) {
      throw new Invalid(`Invalid '${key}': expected a positive integer, but got ${JSON.stringify(value)}.`, key);
    }
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) {
    throw new Invalid("llm-sim only supports 'n': 1.", 'n');
  }
}

function checkNumber(body: Record<string, unknown>, key: string, min: number, max: number): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    throw new Invalid(
      `Invalid '${key}': expected a number between ${min} and ${max}, but got ${JSON.stringify(value)}.`,
      key,
    );
  }
}

function checkTools(tools: unknown): Set<string> {
  const names = new Set<string>();
  if (tools === undefined || tools === null) return names;
  if (!Array.isArray(tools))
    throw new Invalid(`Invalid type for 'tools': expected an array, but got ${describe(tools)}.`, 'tools');
  tools.forEach((tool, i) => {
    const param = `tools[${i}]`;
    if (!isObject(tool)) throw new Invalid(`Invalid type for '${param}': expected an object.`, param);
    if (tool.type !== 'function') {
      throw new Invalid(
        `Invalid value for '${param}.type': expected 'function', got ${JSON.stringify(tool.type)}.`,
        `${param}.type`,
      );
    }
    const fn = tool.function;
    if (!isObject(fn)) throw new Invalid(`Missing required parameter: '${param}.function'.`, `${param}.function`);
    if (typeof fn.name !== 'string' || !TOOL_NAME.test(fn.name)) {
      throw new Invalid(
        `Invalid '${param}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$', got ${JSON.stringify(fn.name)}.`,
        `${param}.function.name`,
      );
    }
    if (names.has(fn.name)) {
      throw new Invalid(`Invalid 'tools': duplicate function name '${fn.name}' (${param}).`, `${param}.function.name`);
    }
    names.add(fn.name);
    if (fn.description !== undefined && typeof fn.description !== 'string') {
      throw new Invalid(
        `Invalid type for '${param}.function.description': expected a string.`,
        `${param}.function.description`,
      );
    }
    if (fn.parameters !== undefined && !isObject(fn.parameters)) {
      throw new Invalid(
        `Invalid type for '${param}.function.parameters': expected an object (a JSON schema).`,
        `${param}.function.parameters`,
      );
    }
  });
  return names;
}

function checkToolChoice(choice: unknown, toolNames: Set<string>): void {
  if (choice === undefined || choice === null) return;
  if (toolNames.size === 0) {
    throw new Invalid(
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
      'tool_choice',
    );
  }
  if (typeof choice === 'string') {
    if (!['none', 'auto', 'required'].includes(choice)) {
      throw new Invalid(`Invalid value for 'tool_choice': ${JSON.stringify(choice)}.`, 'tool_choice');
    }
    return;
  }
  const name = isObject(choice) && isObject(choice.function) ? choice.function.name : undefined;
  if (!isObject(choice) || choice.type !== 'function' || typeof name !== 'string') {
    throw new Invalid(
      "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or {type:'function', function:{name}}.",
      'tool_choice',
    );
  }
  if (!toolNames.has(name)) {
    throw new Invalid(`Invalid value for 'tool_choice': no function named '${name}' in 'tools'.`, 'tool_choice');
  }
}

function checkMessage(message: unknown, i: number): void {
  const param = `messages[${i}]`;
  if (!isObject(message))
    throw new Invalid(`Invalid type for '${param}': expected an object, but got ${describe(message)}.`, param);
  if (typeof message.role !== 'string' || !ROLES.has(message.role)) {
    throw new Invalid(
      `Invalid value for '${param}.role': ${JSON.stringify(message.role)}. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'.`,
      `${param}.role`,
    );
  }
  const unknown = Object.keys(message).filter((k) => !MESSAGE_FIELDS[message.role as string].has(k));
  if (unknown.length > 0) {
    throw new Invalid(
      `Additional properties are not allowed ('${unknown.join("', '")}' ${unknown.length === 1 ? 'was' : 'were'} unexpected) - '${param}' (role ${message.role}).`,
      `${param}.${unknown[0]}`,
    );
  }
  if (message.name !== undefined && typeof message.name !== 'string') {
    throw new Invalid(`Invalid type for '${param}.name': expected a string.`, `${param}.name`);
  }
  switch (message.role) {
    case 'system':
    case 'developer':
      checkContent(message.content, `${param}.content`, new Set(['text']));
      return;
    case 'user':
      checkContent(message.content, `${param}.content`, USER_PART_TYPES);
      return;
    case 'tool':
      if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '') {
        throw new Invalid(`Missing required parameter: '${param}.tool_call_id'.`, `${param}.tool_call_id`);
      }
      checkContent(message.content, `${param}.content`, new Set(['text']));
      return;
    case 'assistant':
      checkAssistant(message, param);
      return;
  }
}

function checkAssistant(message: Record<string, unknown>, param: string): void {
  const calls = message.tool_calls;
  const hasCalls = Array.isArray(calls) && calls.length > 0;
  if (calls !== undefined && calls !== null && !Array.isArray(calls)) {
    throw new Invalid(`Invalid type for '${param}.tool_calls': expected an array.`, `${param}.tool_calls`);
  }
  if (Array.isArray(calls) && calls.length === 0) {
    throw new Invalid(
      `Invalid '${param}.tool_calls': empty array. Expected an array with minimum length 1, or omit it.`,
      `${param}.tool_calls`,
    );
  }
  if (message.content === undefined || message.content === null) {
    if (!hasCalls) {
      throw new Invalid(
        `Invalid value for '${param}.content': expected a string, got null (an assistant message without tool_calls needs content).`,
        `${param}.content`,
      );
    }
  } else {
    checkContent(message.content, `${param}.content`, new Set(['text', 'refusal']));
  }
  if (!hasCalls) return;
  const seen = new Set<string>();
  (calls as unknown[]).forEach((call, j) => {
    const p = `${param}.tool_calls[${j}]`;
    if (!isObject(call)) throw new Invalid(`Invalid type for '${p}': expected an object.`, p);
    if (typeof call.id !== 'string' || call.id === '')
      throw new Invalid(`Missing required parameter: '${p}.id'.`, `${p}.id`);
    if (seen.has(call.id)) throw new Invalid(`Invalid '${p}.id': duplicate tool call id '${call.id}'.`, `${p}.id`);
    seen.add(call.id);
    if (call.type !== 'function') throw new Invalid(`Invalid value for '${p}.type': expected 'function'.`, `${p}.type`);
    const fn = call.function;
    if (!isObject(fn)) throw new Invalid(`Missing required parameter: '${p}.function'.`, `${p}.function`);
    const extra = [
      ...Object.keys(call).filter((k) => !['id', 'type', 'function'].includes(k)),
      ...Object.keys(fn)
        .filter((k) => !['name', 'arguments'].includes(k))
        .map((k) => `function.${k}`),
    ];
    if (extra.length > 0) {
      throw new Invalid(
        `Additional properties are not allowed ('${extra.join("', '")}') - '${p}'.`,
        `${p}.${extra[0]}`,
      );
    }
    if (typeof fn.name !== 'string' || !TOOL_NAME.test(fn.name)) {
      throw new Invalid(
        `Invalid '${p}.function.name': expected a string matching '^[a-zA-Z0-9_-]{1,64}$', got ${JSON.stringify(fn.name)}.`,
        `${p}.function.name`,
      );
    }
    if (typeof fn.arguments !== 'string') {
      throw new Invalid(
        `Invalid type for '${p}.function.arguments': expected a string (JSON text), but got ${describe(fn.arguments)}.`,
        `${p}.function.arguments`,
      );
    }
  });
}

function checkContent(content: unknown, param: string, partTypes: Set<string>): void {
  if (typeof content === 'string') return;
  if (content === undefined || content === null) {
    throw new Invalid(
      `Invalid value for '${param}': expected a string or an array of content parts, got ${describe(content)}.`,
      param,
    );
  }
  if (!Array.isArray(content)) {
    throw new Invalid(
      `Invalid type for '${param}': expected a string or an array of content parts, but got ${describe(content)}.`,
      param,
    );
  }
  if (content.length === 0) {
    throw new Invalid(`Invalid '${param}': empty array. Expected an array with minimum length 1.`, param);
  }
  content.forEach((part, k) => {
    const p = `${param}[${k}]`;
    if (!isObject(part) || typeof part.type !== 'string')
      throw new Invalid(`Invalid type for '${p}': expected a content part object with a 'type'.`, p);
    if (!partTypes.has(part.type)) {
      throw new Invalid(
        `Invalid value for '${p}.type': ${JSON.stringify(part.type)} is not allowed here (expected one of ${[...partTypes].join(', ')}).`,
        `${p}.type`,
      );
    }
    if (part.type === 'image_url') checkImagePart(part, p);
    if (part.type === 'text' && typeof part.text !== 'string') {
      throw new Invalid(`Missing required parameter: '${p}.text'.`, `${p}.text`);
    }
    if (part.type === 'text') {
      const extra = Object.keys(part).filter((k) => !TEXT_PART_FIELDS.has(k));
      if (extra.length > 0) {
        throw new Invalid(
          `Additional properties are not allowed ('${extra.join("', '")}') - '${p}'.`,
          `${p}.${extra[0]}`,
        );
      }
      const cc = part.cache_control;
      if (cc !== undefined && !(isObject(cc) && cc.type === 'ephemeral' && Object.keys(cc).length === 1)) {
        throw new Invalid(
          `Invalid value for '${p}.cache_control': expected {"type": "ephemeral"}.`,
          `${p}.cache_control`,
        );
      }
    }
  });
}

/**
 * Every assistant tool call is answered by exactly one `tool` message before the next non-tool
 * message, and every `tool` message answers a call of the assistant message just before its run.
 */
function checkToolCallPairing(messages: SimWireMessage[]): void {
  let open: Map<string, number> | null = null;
  let openAt = -1;
  const answered = new Set<string>();
  const closeOpen = (at: number): void => {
    if (open === null) return;
    const missing = [...open.keys()].filter((id) => !answered.has(id));
    if (missing.length > 0) {
      throw new Invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')} (messages[${openAt}]${at < messages.length ? `, before messages[${at}]` : ', at the end of messages'}).`,
        `messages.[${openAt}].tool_calls`,
      );
    }
    open = null;
    answered.clear();
  };
  messages.forEach((message, i) => {
    if (message.role === 'tool') {
      const id = message.tool_call_id as string;
      if (open === null || !open.has(id)) {
        throw new Invalid(
          `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[${i}].tool_call_id ${JSON.stringify(id)} answers no open tool call).`,
          `messages.[${i}].tool_call_id`,
        );
      }
      if (answered.has(id)) {
        throw new Invalid(
          `Invalid parameter: tool_call_id ${JSON.stringify(id)} is answered twice (messages[${i}]).`,
          `messages.[${i}].tool_call_id`,
        );
      }
      answered.add(id);
      return;
    }
    closeOpen(i);
    if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
      open = new Map(message.tool_calls.map((call, j) => [call.id, j]));
      openAt = i;
    }
  });
  closeOpen(messages.length);
}

/** Image types a data URL may carry (what OpenAI's chat completions takes). */
const DATA_URL = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]*={0,2})$/;
const IMAGE_PART_FIELDS = new Set(['type', 'image_url']);
const IMAGE_URL_FIELDS = new Set(['url', 'detail']);

/**
 * An `image_url` part as OpenAI checks it: `{ url, detail? }`, the URL an http(s) URL or a base64
 * `data:` URL of a PNG, JPEG, GIF or WebP image, `detail` one of auto, low, high.
 */
function checkImagePart(part: Record<string, unknown>, p: string): void {
  const extra = Object.keys(part).filter((k) => !IMAGE_PART_FIELDS.has(k));
  if (extra.length > 0)
    throw new Invalid(`Additional properties are not allowed ('${extra.join("', '")}') - '${p}'.`, `${p}.${extra[0]}`);
  const image = part.image_url;
  if (!isObject(image) || typeof image.url !== 'string')
    throw new Invalid(`Missing required parameter: '${p}.image_url.url'.`, `${p}.image_url.url`);
  const extraUrl = Object.keys(image).filter((k) => !IMAGE_URL_FIELDS.has(k));
  if (extraUrl.length > 0)
    throw new Invalid(
      `Additional properties are not allowed ('${extraUrl.join("', '")}') - '${p}.image_url'.`,
      `${p}.image_url.${extraUrl[0]}`,
    );
  if (image.detail !== undefined && !['auto', 'low', 'high'].includes(image.detail as string))
    throw new Invalid(
      `Invalid value for '${p}.image_url.detail': expected auto, low or high.`,
      `${p}.image_url.detail`,
    );
  const url = image.url;
  if (/^https?:\/\//.test(url)) return;
  const data = DATA_URL.exec(url);
  if (!data || data[2].length === 0 || data[2].length % 4 !== 0)
    throw new Invalid(
      `Invalid image URL: '${p}.image_url.url' must be an http(s) URL or a base64 data URL of a PNG, JPEG, GIF or WebP image.`,
      `${p}.image_url.url`,
    );
}
