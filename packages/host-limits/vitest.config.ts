import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig();
