export * from '../../src/emulator/process-table.js';
export { TAG_VARIABLE as TAG_VARIABLE_FOR_TEST } from '../../src/supervisor.js';
