// The real npm piston-client 1.0.2, unchanged, against ward serve --piston:
// prints PASS:/FAIL: lines (tests/lib.sh's format).  argv: SERVER PROGRAMS_DIR
import { piston } from 'piston-client';
import fs from 'fs';
const [server, dir] = process.argv.slice(2);
const client = piston({ server });
let failed = 0;
const check = (name, ok, detail) => {
	console.log(`${ok ? 'PASS' : 'FAIL'}: piston-client: ${name}${ok ? '' : ': ' + JSON.stringify(detail).slice(0, 600)}`);
	if (!ok) failed++;
};

(async () => {
	const rts = await client.runtimes();
	const names = Array.isArray(rts) ? rts.map((r) => r.language) : [];
	for (const l of ['python', 'c', 'c++', 'javascript', 'java'])
		check(`runtimes() lists ${l} with a semver version`,
		      names.includes(l) && /^\d+\.\d+\.\d+$/.test(rts.find((r) => r.language === l).version), rts);
	// the client's default args are ["1","2","3"]: our programs count them
	const files = { python: 'main.py', c: 'main.c', 'c++': 'main.cpp', javascript: 'main.js', java: 'Main.java' };
	for (const [lang, file] of Object.entries(files)) {
		const code = fs.readFileSync(`${dir}/${file}`, 'utf8');
		const r = await client.execute(lang, code, { stdin: '2 40' });
		check(`execute(${lang}) runs our program`, r.run && r.run.stdout === 'sum 42 args 3\n' && r.run.code === 0, r);
		check(`execute(${lang}) names the language`, r.language === lang, r.language);
	}
	// Java as Piston runs it (the source launcher): any public class, any file name
	const sol = 'import java.util.*;\npublic class Solution {\n  public static void main(String[] a) {\n' +
		'    System.out.println("solution " + new Scanner(System.in).nextInt() * 2 + " " + a.length);\n  }\n}\n';
	let r = await client.execute('java', sol, { stdin: '21' });
	check('java: public class Solution (not Main) runs', r.run && r.run.stdout === 'solution 42 3\n' && r.run.code === 0, r);
	check('java: no compile stage, as Piston\'s java package', r.compile === undefined, r.compile);
	r = await client.execute({ language: 'java', version: '*', files: [{ name: 'anything.java', content: sol }], stdin: '1', args: [] });
	check('java: a file named anything.java', r.run && r.run.stdout === 'solution 2 0\n', r);
	r = await client.execute({ language: 'java', files: [{ content: 'class HelloWorld { public static void main(String[] a) { System.out.println("OK"); } }' }] });
	check('java: class HelloWorld in an unnamed file (Piston\'s own test)', r.run && r.run.stdout === 'OK\n', r);
	r = await client.execute('java', 'public class Broken { void f() { int x = } }');
	check('java: a syntax error: a non-zero exit, the error on stderr', r.run && r.run.code !== 0 && /error/.test(r.run.stderr), r);
	r = await client.execute('py', 'print(input())', { stdin: 'hi' });
	check('an alias without a version (the client leaves version out)', r.run && r.run.stdout === 'hi\n', r);
	r = await client.execute({ language: 'c', version: '*', files: [{ name: 'main.c', content: 'int main(void){return 0;}' }] });
	check('execute(config) with files: compile is there, code 0', r.compile && r.compile.code === 0 && r.run.code === 0, r);
	r = await client.execute('c', 'int main(void) { return x; }');
	check('a C syntax error: compile.code != 0 and run is compile', r.compile && r.compile.code !== 0 &&
	      JSON.stringify(r.run) === JSON.stringify(r.compile), r);
	r = await client.execute('cobol9', 'x');
	check('an unknown language: Piston\'s message', r.message === 'cobol9-* runtime is unknown', r);
	r = await client.execute('python', 'while True: pass', { runTimeout: 1000 });
	check('an endless loop: TO and SIGKILL', r.run && r.run.status === 'TO' && r.run.signal === 'SIGKILL', r);
	r = await client.execute('python', 'import os\nos.kill(os.getpid(), 11)');
	check('a SIGSEGV: SG, the signal named', r.run && r.run.status === 'SG' && r.run.signal === 'SIGSEGV', r);
	r = await client.execute('python', 'import sys\nsys.exit(3)');
	check('exit 3: RE, code 3', r.run && r.run.status === 'RE' && r.run.code === 3, r);
	process.exit(failed ? 1 : 0);
})().catch((e) => {
	console.log(`FAIL: piston-client: threw ${e}`);
	process.exit(1);
});
