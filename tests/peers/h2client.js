// HTTP/2 cleartext client for reel tests: makes the requests named on the
// command line over one connection, sequentially, and prints "STATUS PATH" per
// response. Usage: node h2client.js PORT GET:/hello POST:/echo:BODY GET:/nope
'use strict';
const http2 = require('http2');
const port = Number(process.argv[2]);
const reqs = process.argv.slice(3);
const client = http2.connect(`http://[::1]:${port}`);
client.on('error', (e) => { console.error(e.message); process.exit(1); });
(async () => {
	for (const r of reqs) {
		const [method, path, body] = r.split(':');
		await new Promise((resolve, reject) => {
			const req = client.request({ ':method': method, ':path': path });
			let status = 0;
			req.on('response', (h) => { status = h[':status']; });
			req.on('data', () => {});
			req.on('end', () => { console.log(`${status} ${path}`); resolve(); });
			req.on('error', reject);
			if (body !== undefined) req.end(body); else req.end();
		});
	}
	client.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
