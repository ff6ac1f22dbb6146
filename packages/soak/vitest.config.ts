import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

// --expose-gc: the soak measures the heap after full collections.
export default sandstreamVitestConfig({ execArgv: ['--expose-gc'] });
