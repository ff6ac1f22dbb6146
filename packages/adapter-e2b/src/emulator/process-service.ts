/**
 * envd's process service over the emulator's commands: the Connect routes
 * (Start, Connect, List, SendInput, CloseStdin, SendSignal, Update,
 * StreamInput), each as envd answers it.
 */
import { create, toJson } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { hold, sleep } from '@sandstream/remote/emulator';
import { Process as ProcessService, ProcessInfoSchema, Signal as WireSignal, type ProcessInput, type ProcessSelector } from '../gen/envd-process_pb.js';
import type { Command } from './command.js';
import type { Envd } from './context.js';
import { startCommand } from './spawn.js';
import { follow } from './stream.js';
import { answerHttpStatus, enter, unaryAnswer } from './wire.js';

/** The running command a selector names, or envd's NotFound. */
function find(envd: Envd, selector: ProcessSelector | undefined): Command {
  const sel = selector?.selector;
  if (sel?.case === 'pid') {
    const command = envd.running.get(sel.value);
    if (command === undefined) throw new ConnectError(`process with pid ${sel.value} not found`, Code.NotFound);
    return command;
  }
  if (sel?.case === 'tag') {
    for (const command of envd.running.values()) if (command.tag === sel.value) return command;
    throw new ConnectError(`process with tag ${sel.value} not found`, Code.NotFound);
  }
  throw new ConnectError('invalid selector', Code.Unimplemented);
}

/** Input to a command as envd's SendInput and StreamInput take it (input.go, `handleInput`): stdin bytes, or terminal bytes. */
async function handleInput(command: Command, input: ProcessInput | undefined): Promise<void> {
  const bytes = input?.input;
  if (bytes?.case === 'stdin') return command.write(bytes.value);
  if (bytes?.case === 'pty') return command.writePty(bytes.value);
  // Go's `%T` of the empty oneof.
  throw new ConnectError('invalid input type <nil>', Code.Unimplemented);
}

/** The routes of envd's process service, for `connectNodeAdapter`. */
export function processRoutes(envd: Envd): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ProcessService, {
      async *start(request, ctx) {
        const call = await enter(envd, 'Start', toJson(ProcessService.method.start.input, request), ctx);
        const command = await startCommand(envd, request, call.req);
        const subscription = command.subscribe();
        const status = envd.faults.take(call.recorded, ['http-status'], (fault) => fault.served === true);
        if (status !== undefined) {
          // Started, but the client is told otherwise.
          command.unsubscribe(subscription);
          answerHttpStatus(call, status);
          await hold(ctx.signal);
          return;
        }
        const slow = envd.faults.take(call.recorded, ['slow-headers']);
        if (slow !== undefined) await sleep(slow.ms, ctx.signal);
        yield* follow(envd, command, subscription, call, ctx);
      },

      async *connect(request, ctx) {
        const call = await enter(envd, 'Connect', toJson(ProcessService.method.connect.input, request), ctx);
        const command = find(envd, request.process);
        // No replay: a new subscriber sees only what happens from now on.
        const subscription = command.subscribe();
        const slow = envd.faults.take(call.recorded, ['slow-headers']);
        if (slow !== undefined) await sleep(slow.ms, ctx.signal);
        yield* follow(envd, command, subscription, call, ctx);
      },

      async list(request, ctx) {
        const call = await enter(envd, 'List', toJson(ProcessService.method.list.input, request), ctx);
        await unaryAnswer(envd, call, ctx);
        return {
          processes: [...envd.running.values()].map((command) =>
            create(ProcessInfoSchema, {
              pid: command.pid,
              config: { cmd: command.config.cmd, args: [...command.config.args], envs: { ...command.config.envs }, ...(command.config.cwd === undefined ? {} : { cwd: command.config.cwd }) },
              ...(command.tag === undefined ? {} : { tag: command.tag }),
            }),
          ),
        };
      },

      async sendInput(request, ctx) {
        const call = await enter(envd, 'SendInput', toJson(ProcessService.method.sendInput.input, request), ctx);
        await handleInput(find(envd, request.process), request.input);
        await unaryAnswer(envd, call, ctx);
        return {};
      },

      async closeStdin(request, ctx) {
        const call = await enter(envd, 'CloseStdin', toJson(ProcessService.method.closeStdin.input, request), ctx);
        await find(envd, request.process).closeStdin();
        await unaryAnswer(envd, call, ctx);
        return {};
      },

      async sendSignal(request, ctx) {
        const call = await enter(envd, 'SendSignal', toJson(ProcessService.method.sendSignal.input, request), ctx);
        const command = find(envd, request.process);
        // envd takes these two only (services/process/signal.go).
        if (request.signal === WireSignal.SIGKILL) command.signal('SIGKILL');
        else if (request.signal === WireSignal.SIGTERM) command.signal('SIGTERM');
        else throw new ConnectError(`invalid signal: ${WireSignal[request.signal]}`, Code.Unimplemented);
        await unaryAnswer(envd, call, ctx);
        return {};
      },

      async update(request, ctx) {
        const call = await enter(envd, 'Update', toJson(ProcessService.method.update.input, request), ctx);
        const command = find(envd, request.process);
        // Without `pty`, nothing to change; the size truncated to 16 bits as envd's `pty.Winsize` holds it.
        if (request.pty !== undefined) command.resize((request.pty.size?.cols ?? 0) & 0xffff, (request.pty.size?.rows ?? 0) & 0xffff);
        await unaryAnswer(envd, call, ctx);
        return {};
      },

      // A client stream (input.go, `streamInputHandler`): a start event names the command, data
      // events are written as SendInput's input, keepalives are ignored; the answer comes at the
      // stream's end. Recorded once, when it opens (its messages are not).
      async streamInput(requests, ctx) {
        const call = await enter(envd, 'StreamInput', null, ctx);
        let command: Command | undefined;
        for await (const request of requests) {
          const event = request.event;
          if (event.case === 'start') command = find(envd, event.value.process);
          else if (event.case === 'data') {
            // envd dereferences the command it has not got (a panic, which the client sees as an internal error).
            if (command === undefined) throw new ConnectError('input before the start event', Code.Internal);
            await handleInput(command, event.value.input);
          } else if (event.case !== 'keepalive') throw new ConnectError('invalid event type <nil>', Code.Unimplemented);
        }
        await unaryAnswer(envd, call, ctx);
        return {};
      },
    });
  };
}
