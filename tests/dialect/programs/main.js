// ward's own check for the dialects: the sum of two numbers, the arguments' count.
const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
console.log(`sum ${a + b} args ${process.argv.length - 2}`);
