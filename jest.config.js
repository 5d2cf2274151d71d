/**
 * Library tests. The proxy package has its own runner (proxy/).
 *
 * ts-jest transpiles each test file on its own (tsconfig.test.json has isolatedModules, so no type
 * program per file: that cost about 7 s per suite on a cold cache, and every change to src/ made the
 * cache cold for every suite importing it). The type check of the tests stays: test/typecheck.test.ts
 * runs tsc once over all of them with the same tsconfig (incremental).
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testTimeout: 60000,
  transform: { '^.+\\.tsx?$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json' }] },
};
