//! Black-box tests of the HTTP API. Every test runs on SQLite and on
//! PostgreSQL (see `db_test!`), against the real host on a real socket.
//!
//! Index:
//! - `auth`: Basic and JWT authentication, forged and unacceptable JWTs,
//!   rights, IP allow-lists, X-Forwarded-For, JWT subject, HTTPS, other
//!   dossiers' ids.
//! - `auth_hardening`: JWT keys pinned to one algorithm, duplicate JSON
//!   members in a JWT, an unknown kid answered as a wrong signature,
//!   JWT-only tokens refused over Basic, failed token reloads (health
//!   `stale`, then every credential refused with 503); the Basic challenge
//!   only to requests that sent Basic credentials.
//! - `access_log`: one row per dossier access (reads, writes, refusals), none
//!   outside dossiers; claimed identities apart from verified ones;
//!   append-only at the database level.
//! - `rate_limits`: 429 with `Retry-After` past the burst of requests
//!   without valid credentials per address and of requests per token; a
//!   valid token's bulk upload never refused; an address past its burst
//!   answered 429 before its credentials are read; refusals without valid
//!   credentials (bad fill-out links too) counted a row per client and
//!   minute, written when the minute ends and at shutdown.
//! - `access_log_chain`: the hash chain over every row, whatever wrote it and
//!   however many hosts (two PostgreSQL hosts whose batches lock the same
//!   rows never deadlock on its head); `verify` finds changed, removed and
//!   added rows; an insert that names its own id is refused; one row per
//!   dossier of a multi-dossier read, 10,000 in one write.
//! - `access_log_roles`: `deploy/`'s PostgreSQL roles: the owner migrates,
//!   the service serves, and may append to the access log but never change
//!   it nor choose a row's id (PostgreSQL only).
//! - `backup`: `outcomes backup` and `restore` run as the binary: a
//!   backup during concurrent POSTs restored into a fresh data folder holds
//!   every response acknowledged before it, with its outcome; damaged
//!   copies, copies from a newer version and databases in use refused;
//!   pg_dump and pg_restore wrapped, or named when missing; `outcomes
//!   migrate --check`; a host starting on a database a newer one migrated.
//! - `tls`: HTTPS served by the host with a certificate made in the test.
//! - `connections`: the listener's limits on raw sockets: silent and
//!   byte-by-byte clients, stalled TLS handshakes and bodies (408), idle
//!   keep-alive connections, one client's share of connections (trusted
//!   proxies exempt), the cap on open connections (idle ones make room,
//!   busy ones never).
//! - `forwarded`: behind a reverse proxy: every X-Forwarded-For line, or
//!   RFC 7239 Forwarded when the proxy writes that, the client in
//!   allow-lists and the access log (a forged other header changes
//!   nothing), and the proxy's protocol before credentials count as HTTPS.
//! - `plugins_hostile`: scorers and calculators that loop, bomb memory,
//!   recurse, trap, answer garbage or too much, declare another ABI or
//!   import what is not offered: responses stored with the failure, clear
//!   report errors, other questionnaires unaffected.
//! - `hot_reload`: plugin and definition changes while serving: atomic swap
//!   under load (a request in flight across it, both versions scoring),
//!   a broken version leaves the old one serving.
//! - `catalog`: questionnaires (wrapped, legacy keys or not), protocols,
//!   measurements and respondents, and their 404s.
//! - `hostile`: malformed, oversized, deeply nested, non-UTF-8 and mistyped
//!   bodies, bodies not declared JSON (what a cross-site POST sends),
//!   absurd ids and query strings: clean JSON 4xx, never a 500.
//! - `contract`: Schemathesis, with all its checks, against the OpenAPI
//!   document of a real host: no server error, no answer outside the
//!   document, no valid request refused, no invalid one accepted.
//! - `openapi`: the OpenAPI 3.1 document covers exactly the routes of the
//!   host's route table, their methods as the router answers them, their
//!   parameters, bodies and error answers.
//! - `paths`: `dossier` and `dossiers`, `.json`, trailing slashes, blank
//!   dossier ids, unknown paths (404) and methods (405), answer headers.
//! - `multihost`: two `outcomes serve` processes on one PostgreSQL
//!   database behind HAProxy: one external id posted to both at once is
//!   stored once, a fill-out session moves between hosts, killing one
//!   under load loses nothing acknowledged; two schedulers prepare due
//!   work once (PostgreSQL only).
//! - `database_restart`: PostgreSQL (a server of the test's own) stopped
//!   and started under load: 503 `unavailable` while down, never 500,
//!   served again within 5 s without restarting the host.
//! - `readme`: every command of README.md's "Try it" section, read from
//!   the README, run with bash against the built binary serving: each
//!   exits 0 and prints what the README says it prints.
//! - `alarms`: alarms stored outcomes raise (PHQ-9 item 9): raised with
//!   the POST, PUT or re-scoring that stores them, listed and filtered per
//!   dossier and across dossiers, acknowledged by a named professional,
//!   resolved, closed by a deleted response, escalated by the scheduler
//!   at their deadline; a JWT's `sub`, every step in the access log.
//! - `alarm_delivery`: raised and escalated alarms sent as signed webhooks
//!   to a receiver in the test, to a token's endpoint or the global one:
//!   signatures that verify, retries with one event id through a
//!   receiver's outage, escalations where their alarm went, two hosts on
//!   PostgreSQL delivering and escalating each alarm once.
//! - `smoke`: the host starts, answers /health and the OpenAPI document.
//! - `support`: shared helpers (request bodies, preparing responses through
//!   the store, times on the wire); no tests.
//! - `answer_types`: answers of every question type stored in their own
//!   form; every refusal code of docs/api/responses.md#answer-data, nothing
//!   stored; answers to questions not enabled dropped and named (chains,
//!   pages, flags, retries) or refused under `?strict=true`; PUT likewise;
//!   the language a response was filled out in; the PHQ-9's difficulty item
//!   and the AUDIT's skips as conditions; the OpenAPI document's question
//!   types, conditions, pages and `dropped_answers`.
//! - `translations`: overlays shown with `?language=`, the SHA-256 of the
//!   one a response was filled out in, hot reload, a broken overlay
//!   leaving the previous one serving.
//! - `intake_diary`: the bundled intake and daily diary: answers of every
//!   type stored and scored, every refusal code on their questions,
//!   answers dropped through the intake's chained condition (or refused
//!   under `?strict=true`), their Dutch overlays with the same scores.
//! - `responses_create`: POST a response: the Response object, retries,
//!   external ids, answer validation, field types, dossier creation.
//! - `import`: bulk import, over HTTP (`POST /api/v1/responses/import`)
//!   and as `outcomes import`: mixed good and bad lines answered line by
//!   line, responses scored and access-logged as a POST's, a re-run
//!   stores nothing twice, strict mode writes nothing when a line is bad,
//!   the right and the media type, the command killed half-way (SIGKILL)
//!   and run again stores every line exactly once.
//! - `responses_update`: PUT on a pending response by external id or by the
//!   id of a prepared one; completed, unknown, other dossier, other
//!   questionnaire; races between PUTs, and with a patient's submit, over
//!   two hosts on one database.
//! - `responses_delete`: DELETE by external id only: 204, gone afterwards,
//!   never by numeric id, never in another dossier.
//! - `responses_list`: order by id, every filter (both array spellings, Unix
//!   and ISO 8601 times, all five statuses as the clock moves), invalid
//!   filters and too many questionnaire keys, the shape of responses that
//!   are not completed.
//! - `responses_pages`: the response list in pages: every page of a
//!   dossier of 250 adds up to the whole list, `Link` to the next page and
//!   none on the last, filters kept across pages, bad `page[...]` refused.
//! - `scoring`: the PHQ-9 outcome on POST and PUT (label, value,
//!   interpretation, t-score, referenced values, action, alarm, attention,
//!   completeness), proration and missing values; a response whose scorer
//!   is not loaded is stored with the failure, listed and counted.
//! - `non_responses`: the Non-response object (exact JSON, times in the
//!   configured zone), list and get under both path forms, registering one
//!   for pending responses (withdrawn from the list), every refusal
//!   (blank, invalid, another dossier's or completed responses, responses
//!   already in a non-response), the access log and the right it needs.
//! - `reports`: report calculations: validation and its error shapes, 404s
//!   for unknown calculators and other dossiers' responses, which completed
//!   responses run (ids, filters, time bounds), the right it needs, and the
//!   results of score_series, reliable_change and alarm_summary.
//! - `episodes`: the `episode_outcome` calculator over PHQ-9 responses
//!   with past completion times (baseline, follow-up in the window,
//!   response, remission, reliable change, responses without a total left
//!   out, a response past the window starting an episode), thresholds from
//!   the questionnaire definition; `outcomes report episode_outcome` over
//!   every dossier as JSON and CSV.
//! - `plugins`: GET /api/v1/plugins lists the bundled plugins serving
//!   (manifest, hash, fixtures passed) and never a path; two folders of one
//!   name are both refused; the allow-list of module hashes; /metrics is
//!   Prometheus text without credentials and counts plugin calls.
//! - `metrics_scrape`: /metrics after real traffic, checked by promtool:
//!   every family, requests by route template (never the path), writer,
//!   pool, plugin calls and failures, scheduler steps, build and process
//!   figures; `metrics_listen` serves it on its own address, and the main
//!   listener only to the configured bearer.
//! - `plugin_cache`: compiled code on disk: tampered, foreign and linked
//!   artifacts refused and recompiled, a cache others may use not used,
//!   temporary files a crash left removed at start, the data folder, cache
//!   and SQLite files private.
//! - `fill_out_sessions`: POST fill_out_sessions: the signed link, every
//!   error shape (the bare `missing` pair, `return_url`, `not_allowed` for
//!   URL tricks), 404s, the right and the token's own origins.
//! - `fill_out_requests`: fill-out requests and their callbacks: retries,
//!   withdrawal, validation, Standard Webhooks signatures checked by the
//!   receiver, destinations refused (literal addresses at request time,
//!   names resolving to loopback at send time), redirects not followed.
//! - `fill_out_pages`: the hosted pages over HTTP: login with tampered,
//!   replayed and expired links, the cookie, the progress page, incomplete,
//!   complete (scored) and interrupted submissions, resuming, CSRF, other
//!   dossiers' responses, `completing_url`, flags and textvars, idle
//!   sessions, hostile forms, the access log.
//! - `fill_out_types`: a questionnaire of every question type and four
//!   pages (`tests/fixtures/fillout/steps`): each type's controls and its
//!   answers read back as the API reads them, wrong answers named by the
//!   API's rules, Back and Next, progress, questions and pages appearing
//!   and disappearing (a same-page condition shows the page again),
//!   dropped answers, resuming at the page stopped on, the `language` of
//!   a session and of a fill-out request.
//! - `fill_out_browser`: the same flows in headless Chromium, with
//!   screenshots at phone and desktop width and an axe-core accessibility
//!   check of every page (WCAG 2.1 A and AA), no horizontal scroll on a
//!   phone, the slider answered with the keyboard only.
//! - `visitor`: a cookie-keeping HTTP client for the pages; no tests.
//! - `respondent_links`: links as credentials: a mail scanner's GET spends
//!   no one-time link, a `completing_url` expires and is revoked (API and
//!   command line), the link secret from a file or encrypted in the
//!   database (and an older plain one replaced on start: links it signed
//!   stop working).
//! - `respondent_floods`: a valid link or session used in a loop: 10,000
//!   GETs of a `completing_url` write nothing while an EPD's POSTs all
//!   succeed, its Start button and a session's pages meet their limits,
//!   the same browser goes on in its session, login forms from another
//!   site are refused, sessions are deleted after their retention, a
//!   redirect to the progress page is logged.
//! - `golden`: every plugin crate's fixtures give the same bytes natively
//!   and as wasm through the host's runtime (no database).
//! - `health_checks`: `/livez`, `/readyz` (200 when healthy; 503 naming
//!   an unreachable database, a missing migration, a plugin that failed to
//!   load, a scheduler that stopped passing) and `/version`, without
//!   credentials and naming nothing of the deployment; one readiness
//!   answer a second; probes limited per client address.
//! - `api_docs_browser`: `/api/v1/docs` in headless Chromium: every
//!   operation rendered from files this service serves, no console error,
//!   no policy violation, no request to another origin; its headers and
//!   files over HTTP.
//! - `rescore`: `outcomes rescore` recomputes outcomes stored while the
//!   scorer was missing (dry run, per questionnaire, exact);
//!   `outcomes plugin test` passes good fixtures and fails a wrong one.
//! - `plugin_authoring`: `outcomes plugin new --out` outside the workspace:
//!   the crate tests natively, builds to wasm with cargo on its own, passes
//!   `outcomes plugin test`, is hot-reloaded and scores over HTTP;
//!   `cargo package -p plugin-sdk`.
//! - `assemblyscript`: the AssemblyScript PHQ-9 scorer (built by the tests
//!   with the compiler from npm) answers the Rust scorer's bytes on every
//!   fixture and thousands of generated inputs, passes `outcomes plugin
//!   test`, and over HTTP stores the Rust scorer's outcomes; `env.abort`
//!   traps with its message, hostile arguments too; load errors hint in
//!   the module's language.
//! - `plugin_fuel`: fuel budgets that grow with the input; `outcomes plugin
//!   test --profile` writes a Firefox-format profile.
//! - `verification`: `outcomes verify` and GET .../verification recompute
//!   stored outcomes with the archived module and definition versions: a
//!   changed module byte, stored outcome or missing definition is named;
//!   the right and other dossiers' ids.
//! - `shadow`: candidate scorer versions score in the background: no
//!   difference, differences with both outcomes, promote (refused, then
//!   accepted), discard, two hosts on one database; a response stored by
//!   POST, PUT or a fill-out page is scored by the candidate, once.
//! - `sealed_promotions`: candidate and promoted rows written with SQL
//!   alone (also as the PostgreSQL service role) change no outcome on
//!   either of two hosts and are reported; a version outside
//!   `plugin_allow` is neither installed nor served; the commands' path
//!   still promotes on both hosts.

mod access_log;
mod access_log_chain;
mod access_log_roles;
mod alarm_delivery;
mod alarms;
mod answer_types;
mod api_docs_browser;
mod assemblyscript;
mod auth;
mod auth_hardening;
mod backup;
mod catalog;
mod connections;
mod contract;
mod database_restart;
mod episodes;
mod fill_out_browser;
mod fill_out_pages;
mod fill_out_requests;
mod fill_out_sessions;
mod fill_out_types;
mod forwarded;
mod golden;
mod health_checks;
mod hostile;
mod hot_reload;
mod import;
mod intake_diary;
mod library;
mod metrics_scrape;
mod multihost;
mod non_responses;
mod openapi;
mod paths;
mod plugin_authoring;
mod plugin_cache;
mod plugin_fuel;
mod plugins;
mod plugins_hostile;
mod rate_limits;
mod readme;
mod reports;
mod rescore;
mod respondent_floods;
mod respondent_links;
mod responses_create;
mod responses_delete;
mod responses_list;
mod responses_pages;
mod responses_update;
mod scoring;
mod sealed_promotions;
mod shadow;
mod smoke;
mod stats;
mod subscriptions;
mod support;
mod tls;
mod translations;
mod verification;
mod visitor;
