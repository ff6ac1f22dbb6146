// A scripted language model from `ai/test`: the first step calls one tool,
// the second answers with text. Each call's prompt is kept for inspection.
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

type Generated = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;
type Streamed = Awaited<ReturnType<MockLanguageModelV4['doStream']>>;
type StreamPart = Streamed['stream'] extends ReadableStream<infer P> ? P : never;

/** A model that calls `toolName` with `input` once, then says "done". */
export function toolCallingModel(toolName: string, input: unknown): MockLanguageModelV4 {
  const call = { type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) } as const;
  let generated = 0;
  let streamed = 0;
  return new MockLanguageModelV4({
    doGenerate: async (): Promise<Generated> => {
      generated += 1;
      return generated === 1
        ? { content: [call], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] }
        : { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
    },
    doStream: async (): Promise<Streamed> => {
      streamed += 1;
      const chunks: StreamPart[] =
        streamed === 1
          ? [call, { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage } as const]
          : [
              { type: 'text-start', id: 't' } as const,
              { type: 'text-delta', id: 't', delta: 'done' } as const,
              { type: 'text-end', id: 't' } as const,
              { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage } as const,
            ];
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
}

/** The tool results the model was shown in its later calls' prompts. */
export function toolResultsShown(model: MockLanguageModelV4, calls: 'doGenerateCalls' | 'doStreamCalls'): unknown[] {
  return model[calls]
    .flatMap((options) => options.prompt)
    .filter((message) => message.role === 'tool')
    .flatMap((message) => message.content)
    .map((part) => (part.type === 'tool-result' ? part.output : part));
}
