/** What the CLI says about an adapter module written in TypeScript that Node.js cannot import as it is. */

/**
 * What to do about an adapter module written in TypeScript that this Node.js
 * cannot import: Node 20 and early 22 have no type stripping of their own
 * (`--experimental-strip-types` came in 22.6 and is on by default from 22.18).
 */
export function typeScriptAdvice(specifier: string, version = process.versions.node): string {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const strip = major > 22 || (major === 22 && minor >= 6) ? `; or let Node strip the types: NODE_OPTIONS=--experimental-strip-types npx sandstream-conformance ${specifier}` : '';
  return (
    `cannot load ${specifier}: Node.js ${version} cannot import TypeScript by itself. ` +
    `Build the adapter to JavaScript (tsc) and pass the .js file; or run the kit with a TypeScript loader: ` +
    `npm install --save-dev tsx, then NODE_OPTIONS='--import tsx' npx sandstream-conformance ${specifier}${strip}`
  );
}
