// The real npm piston-client 1.0.2, which cannot send a header, against a
// runner with tokens whose --piston listener counts its requests as one
// named client (--piston-client): prints PASS:/FAIL: lines.
// argv: SERVER EXPECT_CLIENT_NAME
import { piston } from 'piston-client';
const [server, name] = process.argv.slice(2);
const client = piston({ server });
let failed = 0;
const check = (what, ok, detail) => {
	console.log(`${ok ? 'PASS' : 'FAIL'}: piston-client: ${what}${ok ? '' : ': ' + JSON.stringify(detail).slice(0, 600)}`);
	if (!ok) failed++;
};

(async () => {
	const rts = await client.runtimes();
	check('runtimes() on a runner with tokens, no header sent', Array.isArray(rts) && rts.some((r) => r.language === 'python'), rts);
	let r = await client.execute('python', 'print(input())', { stdin: 'hi' });
	check('execute() runs', r.run && r.run.stdout === 'hi\n', r);
	r = await client.execute('python', 'print(2)');
	check('a second execute() runs (--client-rate 2)', r.run && r.run.stdout === '2\n', r);
	r = await client.execute('python', 'print(3)');
	check(`a third is over client '${name}''s quota: Piston's {message} naming it`,
	      !r.run && typeof r.message === 'string' && r.message.includes(`client '${name}'`), r);
	process.exit(failed ? 1 : 0);
})().catch((e) => {
	console.log(`FAIL: piston-client: threw ${e}`);
	process.exit(1);
});
