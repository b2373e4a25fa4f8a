#!/usr/bin/env node
// A null OTLP/HTTP receiver for the tracing overhead benchmark (trace_overhead.sh): reads each
// POST /v1/traces body and answers 200 with an empty protobuf response, counting requests and
// bytes, so the collector's own work on the same machine stays negligible (the test collector,
// tests/clients/otlp_collector.mjs, decodes everything and would compete for the cores).
//   node bench/otlp_sink.mjs --port-file FILE   (prints its counts on SIGTERM)
import fs from 'node:fs';
import http from 'node:http';

let portFile = '';
for (let i = 2; i < process.argv.length; i += 2)
    if (process.argv[i] === '--port-file') portFile = process.argv[i + 1];
let requests = 0, bytes = 0;
const server = http.createServer((req, res) => {
    req.on('data', (c) => { bytes += c.length; });
    req.on('end', () => {
        requests += 1;
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': 0 });
        res.end();
    });
});
server.listen(0, '127.0.0.1', () => {
    const port = server.address().port;
    if (portFile) {
        fs.writeFileSync(portFile + '.tmp', String(port));
        fs.renameSync(portFile + '.tmp', portFile);
    }
    console.log(`listening ${port}`);
});
process.on('SIGTERM', () => {
    console.log(JSON.stringify({ requests, bytes }));
    process.exit(0);
});
