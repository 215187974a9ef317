// Tests run on the compiled output: worker threads and child processes then load the
// same .js files the CLI ships, with no loader in between. ROSTORE_OUT lets a developer
// compile into another folder (for example .build/x) without touching dist/.
module.exports = {
  rootDir: process.env.ROSTORE_OUT || 'dist',
  testMatch: ['**/test/**/*.test.js'],
  testEnvironment: 'node',
  testTimeout: 60000,
  maxWorkers: 2,
}
