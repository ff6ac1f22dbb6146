// The guide's Vitest form of the kit. Type-checked, not run (its name does
// not end in .test.ts): `npm test` runs the same kit through the CLI.

// #region kit-in-vitest
import { describeConformance } from '@sandstream/conformance/vitest';
import createSandbox, { conformanceHooks } from '../src/index.js';

describeConformance({ factory: createSandbox, hooks: conformanceHooks });
// #endregion kit-in-vitest
