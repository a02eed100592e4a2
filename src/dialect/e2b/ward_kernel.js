// ward_kernel.js — the code interpreter's JavaScript and TypeScript kernel
// (SPEC §18): one Node process per code context, inside the sandbox, under
// its limits.  A cell runs through Node's own REPL evaluator, so
// declarations persist from call to call and top-level `await` works, as in
// E2B's JavaScript kernel; `ts` cells have their types stripped first by the
// template's TypeScript compiler (E2B strips them with Babel; neither checks
// them).
//
// Started as `node -e THIS LANG` with the protocol on fd 3 and fd 1 joined
// to fd 2 (what a child of the code prints never reaches the protocol; ward
// forwards it as stderr).  stdin: one request a line, {"code", "env"}.
// fd 3: {"type": "__ready__", "kernel": ...} (or "__unavailable__" naming
// what is missing, then exit), then per request the events of E2B's
// /execute NDJSON, one a line, then {"type": "__done__"}.  SIGINT interrupts
// the running cell (a synchronous loop too); the context lives on.
'use strict';
const fs = require('fs');
const readline = require('readline');
const repl = require('repl');
const util = require('util');
const { PassThrough } = require('stream');

const PROTO = 3;
const CHUNK = 64 * 1024;  // an output event carries at most this many characters
const LINE_CAP = 1 << 20; // of one line (no newline yet) this much is kept, the rest dropped and said
const lang = process.argv[1] === 'ts' ? 'ts' : 'js';
const HOME = process.env.HOME || '/home/user';

function emit(ev) {
  const line = JSON.stringify(ev) + '\n';
  for (let b = Buffer.from(line), off = 0; off < b.length;)
    off += fs.writeSync(PROTO, b, off);
}

const now = () => new Date().toISOString();

class Stream {
  constructor(name) { this.name = name; this.buf = ''; this.line = 0; this.dropped = 0; }
  out(text) { if (text) emit({ type: this.name, text, timestamp: now() }); }
  write(s) {
    while (s.length) {
      const i = s.indexOf('\n');
      const part = i < 0 ? s : s.slice(0, i + 1);
      s = i < 0 ? '' : s.slice(i + 1);
      const nl = part.endsWith('\n');
      const body = nl ? part.slice(0, -1) : part;
      const kept = body.slice(0, Math.max(0, LINE_CAP - this.line));
      this.dropped += body.length - kept.length;
      this.line += kept.length;
      this.buf += kept;
      if (nl) {
        this.buf += '\n';
        this.flush();
        this.line = 0;
      } else if (this.buf.length >= CHUNK) {
        this.out(this.buf);
        this.buf = '';
      }
    }
  }
  flush() {
    this.out(this.buf);
    this.buf = '';
    if (this.dropped) {
      emit({ type: 'stderr', timestamp: now(),
             text: `[ward: ${this.dropped} characters of one output line past its first ${LINE_CAP} were dropped]\n` });
      this.dropped = 0;
    }
  }
}

const streams = { stdout: new Stream('stdout'), stderr: new Stream('stderr') };
for (const name of ['stdout', 'stderr']) {
  process[name].write = (chunk, enc, cb) => {
    streams[name].write(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    if (typeof enc === 'function') enc();
    else if (typeof cb === 'function') cb();
    return true;
  };
}
const flushStreams = () => { streams.stdout.flush(); streams.stderr.flush(); };

// /home/user is the sandbox's /work under another name (a link): the code
// sees the name it was given, as a shell's pwd does
{
  let real = HOME;
  try { real = fs.realpathSync(HOME); } catch (e) { /* no home: names as they are */ }
  const cwd = process.cwd.bind(process);
  process.cwd = () => {
    const p = cwd();
    return real !== HOME && (p === real || p.startsWith(real + '/')) ? HOME + p.slice(real.length) : p;
  };
}

let ts = null;
if (lang === 'ts') {
  try {
    ts = require('typescript');
  } catch (e) {
    emit({ type: '__unavailable__', missing: 'the TypeScript compiler (the node module typescript, Debian node-typescript)' });
    process.exit(3);
  }
}

const r = repl.start({ input: new PassThrough(), output: new PassThrough(), terminal: false, useColors: false,
                       prompt: '', breakEvalOnSigint: true });
r.context.console = console;  // the REPL's own writes to its output, not to ours
r.context.module = module;
r.context.require = require;
let pending = null;  // the running cell's end: (err, value)
if (r._domain) {     // the REPL reports a cell's error through its domain, not its callback
  r._domain.removeAllListeners('error');
  r._domain.on('error', (e) => { if (pending) pending(e); });
}
// SIGINT: while a cell's synchronous part runs, the REPL's own (it breaks
// the script); while it awaits, or idle, this one: the cell ends, the
// kernel and its state live on
function onSigint() {
  if (pending) {
    const e = new Error('the execution was interrupted');
    e.name = 'KeyboardInterrupt';
    pending(e);
  }
}
process.on('SIGINT', onSigint);

const textOf = (t) => (t.length >= 2 && t[0] === t[t.length - 1] && (t[0] === "'" || t[0] === '"') ? t.slice(1, -1) : t);

let count = 0;
function run(code) {
  return new Promise((resolve) => {
    let done = false;
    const end = (err, value) => {
      if (done) return;
      done = true;
      pending = null;
      flushStreams();
      if (err) {
        if (err.err instanceof Error) err = err.err;  // the REPL's Recoverable
        const name = (err && err.name) || 'Error';
        emit({ type: 'error', name, value: String((err && err.message) ?? err),
               traceback: String((err && err.stack) || `${name}: ${err && err.message}`) });
      } else if (value !== undefined) {
        emit({ type: 'result', text: textOf(util.inspect(value)), extra: {}, is_main_result: true });
      }
      resolve();
    };
    pending = end;
    try {
      if (ts)
        code = ts.transpileModule(code, { reportDiagnostics: false,
          compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.None, removeComments: false } }).outputText;
      process.removeListener('SIGINT', onSigint);
      try {
        r.eval(code, r.context, 'cell', end);
      } finally {
        process.on('SIGINT', onSigint);
      }
    } catch (e) {
      end(e);
    }
  });
}

emit({ type: '__ready__', kernel: `${lang === 'ts' ? 'typescript ' + ts.version + ' on ' : ''}node ${process.version}` });
const queue = [];
let busy = false;
async function next() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    let req;
    try { req = JSON.parse(queue.shift()); } catch (e) { continue; }
    const saved = { ...process.env };
    try {
      for (const [k, v] of Object.entries(req.env || {})) process.env[k] = String(v);
      emit({ type: 'number_of_executions', execution_count: ++count });
      await run(String(req.code ?? ''));
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
      flushStreams();
      emit({ type: '__done__' });
    }
  }
  busy = false;
}
readline.createInterface({ input: process.stdin }).on('line', (l) => { queue.push(l); next(); })
  .on('close', () => process.exit(0));
