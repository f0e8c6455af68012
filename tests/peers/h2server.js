// HTTP/2 cleartext (prior knowledge) test server for reel: GET /hello returns a
// fixed text, POST /echo echoes the body, anything else 404. Synthetic data only.
'use strict';
const http2 = require('http2');
const port = Number(process.argv[2] || 18443);
const server = http2.createServer();
server.on('stream', (stream, headers) => {
	const path = headers[':path'];
	if (headers[':method'] === 'POST' && path === '/echo') {
		const chunks = [];
		stream.on('data', (c) => chunks.push(c));
		stream.on('end', () => {
			stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
			stream.end(Buffer.concat(chunks));
		});
		return;
	}
	if (path === '/hello') {
		stream.respond({ ':status': 200, 'content-type': 'text/plain' });
		stream.end('hello from reel h2 test server\n');
		return;
	}
	stream.respond({ ':status': 404, 'content-type': 'text/plain' });
	stream.end('not found\n');
});
server.listen(port, '::1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
