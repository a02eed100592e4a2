// tests/e2b/interp.mjs — the code interpreter as IPython and beyond (SPEC
// §18), with the real @e2b/code-interpreter SDK.  Run by tests/e2b/interp.sh:
//   interp.mjs ipython          Sandbox.create() with no template (the SDK's
//                               code-interpreter-v1: ward's image of it):
//                               IPython's features, every rich output, E2B's
//                               charts, js/ts/bash contexts, the bounds
//   interp.mjs plain TEMPLATE   a template without IPython or node: the
//                               plain kernel, and the 400 naming node
// Prints PASS:/FAIL: lines, and "# pid ..." lines interp.sh reads.
import { Sandbox, NotFoundError, TimeoutError } from '@e2b/code-interpreter'
import { checks, eq } from './checks.mjs'

const { pass, fail, check, failed } = checks('e2b interp')
const ok = (e) => { if (e.error) throw new Error(`${e.error.name}: ${e.error.value} ${e.error.traceback.slice(0, 400)}`); return e }
const url = process.env.E2B_SANDBOX_URL
// a request to the interpreter's port, as the SDK makes them
const direct = (sbx, method, path, body) => fetch(url + path, {
  method,
  headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999', 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' },
  body: body === undefined ? undefined : JSON.stringify(body),
})

async function ipython() {
  const sbx = await Sandbox.create({ timeoutMs: 300_000 }) // the SDK's default template
  pass(`sandbox of the SDK's default template (${sbx.sandboxId.slice(0, 12)}...)`)

  await check('the interpreter\'s health says IPython', async () => {
    const r = await direct(sbx, 'GET', '/health')
    const b = await r.json()
    console.log(`# kernel: ${b.python}`)
    return eq(r.status, 200) && /^ipython \d/.test(b.python)
  })
  await check('os.getcwd() and %pwd say /home/user', async () => {
    const a = ok(await sbx.runCode('import os; os.getcwd()'))
    const b = ok(await sbx.runCode('%pwd'))
    return eq([a.text, b.text], ['/home/user', '/home/user'])
  })
  await check('!echo: a shell command\'s output as stdout', async () => {
    const e = ok(await sbx.runCode('!echo ward-$((6*7))'))
    return eq(e.logs.stdout.join('').replace(/\r/g, ''), 'ward-42\n')
  })
  await check('%timeit', async () => {
    const e = ok(await sbx.runCode('%timeit -n 3 -r 2 sum(range(100))'))
    return /per loop \(mean .* of 2 runs, 3 loops each\)/.test(e.logs.stdout.join(''))
  })
  await check('top-level await', async () => {
    const e = ok(await sbx.runCode('import asyncio\nasync def f():\n    await asyncio.sleep(0.01)\n    return 6\nx = await f()\nx * 7'))
    return eq(e.text, '42')
  })
  await check('state persists; the execution count counts', async () => {
    const a = ok(await sbx.runCode('kept = 5'))
    const b = ok(await sbx.runCode('kept + 1'))
    return eq(b.text, '6') && eq(b.executionCount, a.executionCount + 1)
  })
  await check('every rich repr IPython gives, on the main result', async () => {
    const e = ok(await sbx.runCode([
      'class R:',
      '    def __repr__(self): return "R()"',
      '    def _repr_html_(self): return "<b>h</b>"',
      '    def _repr_markdown_(self): return "# m"',
      '    def _repr_svg_(self): return "<svg xmlns=\'http://www.w3.org/2000/svg\'/>"',
      '    def _repr_png_(self): return b"\\x89PNG\\r\\n\\x1a\\npng"',
      '    def _repr_jpeg_(self): return b"\\xff\\xd8\\xffjpeg"',
      '    def _repr_pdf_(self): return b"%PDF-1.4 pdf"',
      '    def _repr_latex_(self): return "$x^2$"',
      '    def _repr_json_(self): return {"k": [1, 2]}',
      '    def _repr_javascript_(self): return "console.log(1)"',
      'R()'].join('\n')))
    const r = e.results.find((x) => x.isMainResult)
    const b64 = (s) => Buffer.from(s, 'latin1').toString('base64')
    return eq([r.text, r.html, r.markdown, r.svg, r.png, r.jpeg, r.pdf, r.latex, r.json, r.javascript],
      ['R()', '<b>h</b>', '# m', "<svg xmlns='http://www.w3.org/2000/svg'/>", b64('\x89PNG\r\n\x1a\npng'),
        b64('\xff\xd8\xffjpeg'), b64('%PDF-1.4 pdf'), '$x^2$', { k: [1, 2] }, 'console.log(1)']) &&
      eq(r.formats(), ['html', 'markdown', 'svg', 'png', 'jpeg', 'pdf', 'latex', 'json', 'javascript'])
  })
  await check('display(): IPython.display objects as results that are not the main one', async () => {
    const got = []
    const e = ok(await sbx.runCode([
      'from IPython.display import display, HTML, Markdown, SVG, JSON, Latex, Javascript, Image',
      'display(HTML("<i>x</i>"))', 'display(Markdown("*m*"))', 'display(SVG("<svg xmlns=\'http://www.w3.org/2000/svg\'/>"))',
      'display(JSON({"a": 1}))', 'display(Latex("$y$"))', 'display(Javascript("1+1"))',
      'display(Image(data=b"\\x89PNG\\r\\n\\x1a\\n-img", format="png"))', 'print("between")', '3'].join('\n'),
    { onResult: (r) => got.push(r) }))
    const shown = e.results.filter((r) => !r.isMainResult)
    return eq(shown.map((r) => r.formats()[0]), ['html', 'markdown', 'svg', 'json', 'latex', 'javascript', 'png']) &&
      eq([shown[0].html, shown[1].markdown, shown[3].json, shown[4].latex, shown[5].javascript],
        ['<i>x</i>', '*m*', { a: 1 }, '$y$', '1+1']) &&
      eq(Buffer.from(shown[6].png, 'base64').toString('latin1'), '\x89PNG\r\n\x1a\n-img') &&
      eq(e.text, '3') && eq(got.length, 8) && eq(e.logs.stdout, ['between\n'])
  })
  await check('a dict result is json too; a str result loses its quotes (as E2B\'s server does)', async () => {
    const a = ok(await sbx.runCode('{"a": [1, 2], "b": None}'))
    const b = ok(await sbx.runCode('"abc"'))
    return eq([a.results[0].json, a.text, b.text], [{ a: [1, 2], b: null }, "{'a': [1, 2], 'b': None}", 'abc'])
  })
  await check('a pandas DataFrame: its columns as data, its table as html', async () => {
    const e = ok(await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": ["x", "y"]})'))
    const r = e.results[0]
    return eq(r.data, { a: [1, 2], b: ['x', 'y'] }) && /<table/.test(r.html) && eq(r.isMainResult, true)
  })
  await check('an error: name, value, traceback without colours', async () => {
    const e = await sbx.runCode('def f():\n    raise ValueError("bad")\nf()')
    // eslint-disable-next-line no-control-regex
    return eq([e.error.name, e.error.value], ['ValueError', 'bad']) && /ValueError/.test(e.error.traceback) && !/\x1b\[/.test(e.error.traceback)
  })

  // ---- charts: E2B's chart_data_extractor, as its own tests read it ----
  const chart = async (code) => {
    const e = ok(await sbx.runCode('import matplotlib.pyplot as plt\nimport numpy as np\n' + code + '\nplt.show()'))
    const figs = e.results.filter((r) => r.chart !== undefined)
    if (figs.length !== 1) throw new Error(`${figs.length} chart results: ${JSON.stringify(e.results.map((r) => r.formats()))}`)
    const r = figs[0]
    if (r.isMainResult || !/^<Figure size/.test(r.text) || !r.png) throw new Error(`not a shown figure: ${r.text} ${r.formats()}`)
    return r.chart
  }
  const numbers = (a) => Array.isArray(a) && a.length > 0 && a.every((v) => typeof v === 'number')
  const strings = (a) => Array.isArray(a) && a.length > 0 && a.every((v) => typeof v === 'string')
  const axes = (c) => numbers(c.x_ticks) && numbers(c.y_ticks) && strings(c.x_tick_labels) && strings(c.y_tick_labels)
  await check('chart: line (labels, units, "Line N" for an unlabelled line)', async () => {
    const c = await chart('plt.plot([0, 1, 2], [0, 1, 4], label="sq")\nplt.plot([0, 1, 2], [0, 1, 2])\nplt.title("Squares")\nplt.xlabel("Time (s)")\nplt.ylabel("Distance [m]")')
    return eq([c.type, c.title, c.x_label, c.y_label, c.x_unit, c.y_unit, c.x_scale, c.y_scale],
      ['line', 'Squares', 'Time (s)', 'Distance [m]', 's', 'm', 'linear', 'linear']) && axes(c) &&
      eq(c.elements, [{ label: 'sq', points: [[0, 0], [1, 1], [2, 4]] }, { label: 'Line 1', points: [[0, 0], [1, 1], [2, 2]] }])
  })
  await check('chart: line over dates (a datetime scale, ISO ticks and points)', async () => {
    const c = await chart('import datetime\nd = [datetime.date(2023, 9, 1) + datetime.timedelta(days=i) for i in range(5)]\nplt.plot(d, [1, 2, 3, 4, 5], label="n")')
    return eq([c.type, c.x_scale, c.y_scale, c.title], ['line', 'datetime', 'linear', null]) &&
      strings(c.x_ticks) && !isNaN(Date.parse(c.x_ticks[0])) &&
      eq(c.elements[0].points[0], ['2023-09-01', 1]) && eq(c.elements[0].points.length, 5)
  })
  await check('chart: scatter', async () => {
    const c = await chart('plt.xlabel("A")\nplt.ylabel("B")\nplt.scatter([1, 2, 3], [3, 2, 1], label="D1")\nplt.scatter([4, 5], [6, 7], label="D2")')
    return eq([c.type, c.title, c.x_label, c.y_label, c.x_unit], ['scatter', null, 'A', 'B', null]) && axes(c) &&
      eq(c.elements, [{ label: 'D1', points: [[1, 3], [2, 2], [3, 1]] }, { label: 'D2', points: [[4, 6], [5, 7]] }])
  })
  await check('chart: bar', async () => {
    const c = await chart('plt.bar(["Author A", "Author B", "Author C", "Author D"], [100, 200, 300, 400], label="Books Sold")\nplt.xlabel("Authors")\nplt.ylabel("Number of Books Sold")\nplt.title("Book Sales by Authors")')
    return eq([c.type, c.title, c.x_label, c.y_label, c.x_unit, c.y_unit], ['bar', 'Book Sales by Authors', 'Authors', 'Number of Books Sold', null, null]) &&
      eq(c.elements, ['Author A', 'Author B', 'Author C', 'Author D'].map((label, i) => ({ label, group: 'Books Sold', value: 100 * (i + 1) })))
  })
  await check('chart: pie', async () => {
    const c = await chart('fig, ax = plt.subplots()\nax.pie([90, 10], labels=["No", "No, in blue"], autopct="%1.1f%%", startangle=90)\nplt.title("Will I wake up early tomorrow?")')
    return eq(c, { type: 'pie', title: 'Will I wake up early tomorrow?', elements: [{ label: 'No', angle: 324, radius: 1 }, { label: 'No, in blue', angle: 36, radius: 1 }] })
  })
  await check('chart: box and whisker (quartiles, whiskers, an outlier)', async () => {
    const c = await chart('fig, ax = plt.subplots()\nax.boxplot([[85, 90, 78, 92, 88], [95, 89, 76, 91, 84, 87], [75, 82, 88, 79, 86]], labels=["Class A", "Class B", "Class C"], patch_artist=True)\nax.set_title("Exam Scores Distribution")\nax.set_xlabel("Class")\nax.set_ylabel("Score")')
    return eq([c.type, c.title, c.x_label, c.y_label], ['box_and_whisker', 'Exam Scores Distribution', 'Class', 'Score']) &&
      eq(c.elements, [
        { label: 'Class A', min: 78, first_quartile: 85, median: 88, third_quartile: 90, max: 92, outliers: [] },
        { label: 'Class B', min: 84, first_quartile: 84.75, median: 88, third_quartile: 90.5, max: 95, outliers: [76] },
        { label: 'Class C', min: 75, first_quartile: 79, median: 82, third_quartile: 86, max: 88, outliers: [] }])
  })
  await check('chart: two axes make a superchart', async () => {
    const c = await chart('fig, (a, b) = plt.subplots(1, 2)\nfig.suptitle("Two")\na.plot([1, 2], [3, 4], label="l")\nb.bar(["p", "q"], [1, 2])')
    return eq([c.type, c.title, c.elements.map((x) => x.type)], ['superchart', 'Two', ['line', 'bar']]) &&
      eq(c.elements[0].elements, [{ label: 'l', points: [[1, 3], [2, 4]] }]) &&
      eq(c.elements[1].elements, [{ label: 'p', group: 'Group 0', value: 1 }, { label: 'q', group: 'Group 0', value: 2 }])
  })

  // ---- other languages ----
  await check('js: a persistent Node context with top-level await', async () => {
    const ctx = await sbx.createCodeContext({ language: 'js' })
    ok(await sbx.runCode('let n = 40\nconst f = (x) => x + 1', { context: ctx }))
    const a = ok(await sbx.runCode('console.log("from js"); await new Promise((r) => setTimeout(() => r(f(n) + 1), 10))', { context: ctx }))
    const b = await sbx.runCode('n', { language: 'js' }) // the default js context is another
    const c = ok(await sbx.runCode('process.cwd()', { context: ctx }))
    return eq([ctx.language, a.text, a.logs.stdout, c.text, b.error && b.error.name], ['javascript', '42', ['from js\n'], '/home/user', 'ReferenceError'])
  })
  await check('js: an error is the execution\'s error', async () => {
    const e = await sbx.runCode('null.x', { language: 'js' })
    return eq(e.error.name, 'TypeError')
  })
  await check('ts: types stripped, state kept', async () => {
    ok(await sbx.runCode('const t: number = 5\ninterface P { a: string }', { language: 'ts' }))
    const e = ok(await sbx.runCode('const p: P = { a: "x" }\np.a + t * 2', { language: 'ts' }))
    return eq(e.text, 'x10')
  })
  await check('bash: a persistent shell (variables, cd), an exit status as the error', async () => {
    const ctx = await sbx.createCodeContext({ language: 'bash' })
    ok(await sbx.runCode('X=persisted\ncd /tmp\nf() { echo "f:$1"; }', { context: ctx }))
    const a = ok(await sbx.runCode('echo "$X"; pwd; f 1; echo err >&2', { context: ctx }))
    const b = await sbx.runCode('false', { context: ctx })
    const c = ok(await sbx.runCode('echo $Y', { context: ctx, envs: { Y: 'only this call' } }))
    const d = ok(await sbx.runCode('echo "[$Y]"', { context: ctx }))
    const u = ok(await sbx.runCode("printf 'h\\303\\251 \\377x\\n'", { context: ctx })) // é, then a byte that is no UTF-8
    return eq(u.logs.stdout.join(''), 'h\u00e9 \ufffdx\n') && eq([a.logs.stdout.join(''), a.logs.stderr.join('')], ['persisted\n/tmp\nf:1\n', 'err\n']) &&
      eq([b.error.name, b.error.value], ['', '1']) && eq([c.logs.stdout, d.logs.stdout], [['only this call\n'], ['[]\n']])
  })
  await check('an unknown language answers 400 naming it', async () => {
    const r = await direct(sbx, 'POST', '/contexts', { language: 'cobol' })
    const b = await r.json()
    return eq([r.status, b.code, b.language], [400, 400, 'cobol'])
  })

  // ---- bounds and the issue-30 regressions ----
  await check('one output line is kept up to 1 MiB, the rest dropped and said', async () => {
    const e = ok(await sbx.runCode('import sys\nsys.stdout.write("x" * (3 << 20))\nprint("!")\nprint("next")'))
    const out = e.logs.stdout.join('')
    return eq([out.length, out.slice(-7)], [(1 << 20) + 6, 'x\nnext\n']) &&
      e.logs.stderr.some((l) => /\[ward: \d+ characters of one output line past its first 1048576 were dropped\]/.test(l))
  })
  await check('a kernel line past 8 MiB (written to the protocol itself) is dropped and said; the context lives on', async () => {
    const e = await sbx.runCode([
      'import os, stat',
      'own = {os.readlink("/proc/self/fd/0"), os.readlink("/proc/self/fd/2")}',
      'for fd in map(int, os.listdir("/proc/self/fd")):',
      '    try:',
      '        if stat.S_ISFIFO(os.fstat(fd).st_mode) and os.readlink(f"/proc/self/fd/{fd}") not in own:',
      '            chunk = b"y" * (1 << 20)',
      '            for _ in range(20):',
      '                os.write(fd, chunk)',
      '            os.write(fd, b"\\n")',
      '    except OSError:',
      '        pass',
      'print("wrote")'].join('\n'))
    const next = ok(await sbx.runCode('1 + 1'))
    if (process.env.DEBUG) console.log(JSON.stringify(e).slice(0, 2000))
    return eq(e.logs.stdout, ['wrote\n']) && e.logs.stderr.some((l) => /an output of 20971520 bytes in one piece was dropped/.test(l)) && eq(next.text, '2')
  })
  await check('an unknown context_id: 404 "Context ID not found", the id intact', async () => {
    const id = 'nosuchcontext0123456789abcdef0123456789'
    try {
      await sbx.runCode('1', { context: { id, language: 'python', cwd: '/home/user' } })
      return false
    } catch (e) {
      return e instanceof NotFoundError && eq(e.message, `Context ${id} not found`)
    }
  })
  await check('after a runCode that timed out, the next one finds the same kernel and its state', async () => {
    const ctx = await sbx.createCodeContext()
    const pid = ok(await sbx.runCode('import os, time\nz = 7\nos.getpid()', { context: ctx })).text
    for (const code of ['time.sleep(60)', 'while True: pass']) {
      try { await sbx.runCode(code, { context: ctx, timeoutMs: 800 }); return false } catch (e) { if (!(e instanceof TimeoutError)) throw e }
      const t0 = Date.now()
      const e = ok(await sbx.runCode('(z, os.getpid())', { context: ctx }))
      console.log(`# after a timeout (${code}): the next runCode answered in ${Date.now() - t0} ms`)
      eq(e.text, `(7, ${pid})`)
    }
    console.log(`# timed-out context ${ctx.id}`)
    return true
  })
  await check('js: a timed-out runCode is interrupted (a synchronous loop, an await), the context and its state live on', async () => {
    const ctx = await sbx.createCodeContext({ language: 'js' })
    const pid = ok(await sbx.runCode('var kept = 7; process.pid', { context: ctx })).text
    for (const code of ['while (true) {}', 'await new Promise(() => {})']) {
      try { await sbx.runCode(code, { context: ctx, timeoutMs: 800 }); return false } catch (e) { if (!(e instanceof TimeoutError)) throw e }
      eq(ok(await sbx.runCode('[kept, process.pid]', { context: ctx })).text, `[ 7, ${pid} ]`, code + ': ')
    }
    return true
  })
  await sbx.kill()
}

async function plain(template) {
  const sbx = await Sandbox.create(template, { timeoutMs: 120_000 })
  pass(`sandbox of template ${template}`)
  await check('a template without IPython: health says the plain kernel', async () => {
    const r = await direct(sbx, 'GET', '/health')
    const b = await r.json()
    return eq([r.status, b.python], [200, 'python'])
  })
  await check('the plain kernel runs Python; os.getcwd() says /home/user; %magics are not Python there', async () => {
    const a = ok(await sbx.runCode('import os\nx = 6\nos.getcwd()'))
    const b = ok(await sbx.runCode('x * 7'))
    const c = await sbx.runCode('%pwd')
    return eq([a.text, b.text, c.error && c.error.name], ['/home/user', '42', 'SyntaxError'])
  })
  await check('no node: js answers 400 with a JSON body naming node', async () => {
    const r = await direct(sbx, 'POST', '/contexts', { language: 'js' })
    const b = await r.json()
    return eq([r.status, b.code, b.language, b.missing], [400, 400, 'javascript', 'node (nodejs)']) && /needs node/.test(b.message)
  })
  await check('70 refused js contexts leave nothing behind: a python one is still made', async () => {
    for (let i = 0; i < 70; i++) {
      const r = await direct(sbx, 'POST', '/contexts', { language: 'js' })
      const body = Buffer.from(await r.arrayBuffer()).toString()
      if (r.status !== 400) throw new Error(`create ${i}: ${r.status} ${body}`)
    }
    const ctx = await sbx.createCodeContext({ language: 'python' })
    return eq(ok(await sbx.runCode('6 * 7', { context: ctx })).text, '42')
  })
  await check('no node: runCode({language: "ts"}) is a 400 the SDK throws', async () => {
    try { await sbx.runCode('1', { language: 'ts' }); return false } catch (e) { return /400/.test(e.message) }
  })
  await check('bash is there (minbase has it)', async () => {
    const e = ok(await sbx.runCode('echo $((6*7))', { language: 'bash' }))
    return eq(e.logs.stdout, ['42\n'])
  })
  await sbx.kill()
}

if (process.argv[2] === 'ipython') await ipython()
else await plain(process.argv[3])
process.exit(failed() ? 1 : 0)
