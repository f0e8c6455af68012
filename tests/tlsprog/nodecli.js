// SPDX-License-Identifier: BSD-2-Clause
//
// node's https client for the TLS capture tests (node's embedded OpenSSL,
// over memory BIOs): GETs every PATH at once, each on a connection of its
// own (no keep-alive), with node's defaults otherwise.
//
//	node nodecli.js PORT OUT PATH...
//	    for the i-th PATH writes OUT.i.req (the request head exactly as
//	    node sent it) and OUT.i.got (the body received); prints
//	    "STATUS LEN PATH" per response; exits 1 on any error.
'use strict';
const https = require('https');
const fs = require('fs');

const [port, out, ...paths] = process.argv.slice(2);
const agent = new https.Agent({ keepAlive: false, maxSockets: Infinity });

function get(i, path) {
	return new Promise((resolve, reject) => {
		const req = https.get({ host: '127.0.0.1', port: +port, path, agent,
					rejectUnauthorized: false }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => {
				const body = Buffer.concat(chunks);
				fs.writeFileSync(`${out}.${i}.req`, req._header, 'latin1');
				fs.writeFileSync(`${out}.${i}.got`, body);
				console.log(res.statusCode, body.length, path);
				resolve();
			});
			res.on('error', reject);
		});
		req.on('error', reject);
	});
}

Promise.all(paths.map((p, i) => get(i, p))).catch((e) => {
	console.error('nodecli:', e.message);
	process.exit(1);
});
