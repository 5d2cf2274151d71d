/**
 * How `npm run image` and the image test name the Dockerfile's bases (issue 49, scripts/image/lib.js): by digest
 * when the local image came from a registry, by tag for a local stand-in (which has no registry digest and says
 * it is one), and the Dockerfile records the runtime base it was built on.
 */
import * as fs from 'fs';
import * as path from 'path';

const lib: {
  baseRef(name: string, info?: { standIn: boolean; repoDigests: string[] }): { ref: string; pinned: boolean };
  baseBuildArgs(bases: Array<{ role: string; ref: string }>): Record<string, string>;
  baseImages(): { build: string; runtime: string };
} = require('../scripts/image/lib.js');

const D = `sha256:${'ab'.repeat(32)}`;

test('a base pulled from a registry is named by the digest of its own repository', () => {
  const info = { standIn: false, repoDigests: [`docker.io/library/other@sha256:${'cd'.repeat(32)}`, `docker.io/library/node@${D}`] };
  expect(lib.baseRef('node:24-bookworm-slim', info)).toEqual({ ref: `docker.io/library/node:24-bookworm-slim@${D}`, pinned: true });
  expect(lib.baseRef('registry.example.com:5000/base/node:24', { standIn: false, repoDigests: [`registry.example.com:5000/base/node@${D}`] }))
    .toEqual({ ref: `registry.example.com:5000/base/node:24@${D}`, pinned: true });
});

test('a stand-in, or an image with no digest of that repository, is named by tag and not called pinned', () => {
  expect(lib.baseRef('node:24-bookworm', { standIn: true, repoDigests: [`docker.io/library/node@${D}`] })).toEqual({ ref: 'docker.io/library/node:24-bookworm', pinned: false });
  expect(lib.baseRef('node:24-bookworm', { standIn: false, repoDigests: [`docker.io/library/nodejs@${D}`] })).toEqual({ ref: 'docker.io/library/node:24-bookworm', pinned: false });
  expect(lib.baseRef('node:24-bookworm', undefined)).toEqual({ ref: 'docker.io/library/node:24-bookworm', pinned: false });
  // already pinned by the caller: kept
  expect(lib.baseRef(`node:24-bookworm@${D}`, { standIn: true, repoDigests: [] })).toEqual({ ref: `docker.io/library/node:24-bookworm@${D}`, pinned: true });
});

test('the build arguments name both bases; the Dockerfile builds on Node 24 and records its runtime base', () => {
  expect(lib.baseBuildArgs([{ role: 'build', ref: 'b@x' }, { role: 'runtime', ref: 'r@y' }])).toEqual({ NODE_IMAGE: 'b@x', NODE_SLIM_IMAGE: 'r@y' });
  expect(() => lib.baseBuildArgs([{ role: 'build', ref: 'b' }])).toThrow(/no runtime base/);
  expect(lib.baseImages()).toEqual({ build: 'node:24-bookworm', runtime: 'node:24-bookworm-slim' });
  const dockerfile = fs.readFileSync(path.join(__dirname, '..', 'proxy', 'Dockerfile'), 'utf8');
  const runtimeStage = dockerfile.slice(dockerfile.indexOf('FROM ${NODE_SLIM_IMAGE} AS runtime'));
  expect(runtimeStage).toMatch(/^ARG NODE_SLIM_IMAGE\nLABEL dev\.migration-mesh\.base-image=\$\{NODE_SLIM_IMAGE\}$/m);
});
