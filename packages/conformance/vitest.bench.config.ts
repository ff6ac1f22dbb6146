import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

// The wall-time benchmark: not part of `npm test`.
export default sandstreamVitestConfig({ include: ['bench/**/*.run.ts'], disableConsoleIntercept: true, reporters: ['dot'] });
