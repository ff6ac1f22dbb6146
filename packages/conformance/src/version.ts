import { readFileSync } from 'node:fs';
import { SPEC_VERSION } from '@sandstream/types';

interface PackageJson {
  version: string;
  sandstream?: { specVersion?: string };
}

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as PackageJson;

/** This kit's own version (semver); its major.minor tracks the spec it checks. */
export const KIT_VERSION: string = pkg.version;

/** The spec revision whose requirements this kit checks. */
export const KIT_SPEC_VERSION: string = pkg.sandstream?.specVersion ?? SPEC_VERSION;
