// Tests run on the compiled output: worker threads and child processes then load the
// same .js files the CLI ships, with no loader in between. ROSTORE_OUT lets a developer
// compile into another folder (for example .build/x) without touching dist/.
module.exports = {
  rootDir: process.env.ROSTORE_OUT || 'dist',
  testMatch: ['**/test/**/*.test.js'],
  testEnvironment: 'node',
  testTimeout: 60000,
  maxWorkers: 2,
  // Our compiled files need no transform. hyparquet is ES modules only: Node ≥ 20.19
  // require()s it natively, Jest's own module loader does not (before Node 24.9), so
  // under Jest alone it is compiled to CommonJS.
  transform: { '/node_modules/hyparquet(-writer)?/.+\\.js$': ['babel-jest', { plugins: ['@babel/plugin-transform-modules-commonjs'] }] },
  transformIgnorePatterns: ['/node_modules/(?!hyparquet(-writer)?/)'],
}
