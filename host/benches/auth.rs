//! The authentication step alone: reading the Authorization header and
//! checking it against the token table, for HTTP Basic and for an RS256
//! JWT with the key already parsed (cached): a JWT the table has verified
//! before (every request after a client's first) and one it has not (the
//! full verification), and the RS256 signature check alone as the floor a
//! first use cannot go below. Goals: Basic at most 5 µs, JWT
//! at most 50 µs per request on a 2-core machine. Refusals at the key
//! stage (an unknown `kid`, an algorithm the key is not registered for)
//! must cost what a wrong signature costs: compare `jwt_unknown_kid`,
//! `jwt_unregistered_algorithm` and `jwt_bad_signature`.
//!
//! Run: `cargo bench -p host --bench auth`

use std::hint::black_box;

use base64::Engine;
use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use host::auth::jwt::RsaPublicKey;
use host::auth::secret;
use host::auth::tokens::{Credentials, TokenTable};
use host::store::{StoredKey, StoredToken};
use jsonwebtoken::{Algorithm, EncodingKey, Header};

const PRIVATE_KEY: &str = include_str!("../../tests/fixtures/keys/rsa2048.pem");
const PUBLIC_KEY: &str = include_str!("../../tests/fixtures/keys/rsa2048.pub.pem");

fn table(secret_text: &str, tokens: usize) -> TokenTable {
    let stored = (0..tokens)
        .map(|i| StoredToken {
            id: i as i64,
            consumer_key: format!("epd-{i}"),
            secret_sha256: secret::to_hex(&secret::hash(secret_text)),
            rights: "responses,protocols".into(),
            ip_allow: String::new(),
            allowed_origins: String::new(),
            created_at: Utc::now(),
            revoked_at: None,
            jwt_only: false,
            public_keys: vec![StoredKey {
                pem: PUBLIC_KEY.to_owned(),
                fingerprint: "fixture".into(),
                algorithms: "RS256".into(),
            }],
        })
        .collect();
    TokenTable::new(stored)
}

fn jwt(now: i64) -> String {
    jwt_as(Algorithm::RS256, "epd-7", now)
}

fn jwt_as(alg: Algorithm, kid: &str, now: i64) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    let claims = serde_json::json!({"iss": "epd.example.org", "aud": "api", "iat": now, "exp": now + 3600, "sub": "dossier-1"});
    let key = EncodingKey::from_rsa_pem(PRIVATE_KEY.as_bytes()).expect("fixture key");
    jsonwebtoken::encode(&header, &claims, &key).expect("sign")
}

fn authentication(c: &mut Criterion) {
    assert!(
        RsaPublicKey::from_pem(PUBLIC_KEY).is_ok(),
        "fixture key parses"
    );
    let secret_text = secret::generate();
    let tokens = table(&secret_text, 100);
    let basic_header = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("epd-7:{secret_text}"))
    );
    let now = Utc::now().timestamp();
    let bearer_header = format!("Bearer {}", jwt(now));

    let mut group = c.benchmark_group("authentication");
    group.bench_function("basic", |b| {
        b.iter(|| match Credentials::parse(black_box(&basic_header)) {
            Some(Credentials::Basic { key, secret }) => {
                black_box(tokens.basic(&key, &secret)).is_some()
            }
            _ => false,
        })
    });
    group.bench_function("basic_unknown_key", |b| {
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("nobody:{secret_text}"))
        );
        b.iter(|| match Credentials::parse(black_box(&header)) {
            Some(Credentials::Basic { key, secret }) => {
                black_box(tokens.basic(&key, &secret)).is_some()
            }
            _ => false,
        })
    });
    // A client sends the same JWT with every request for its lifetime: from
    // the second request on, the table remembers it and checks only the
    // time rules.
    group.bench_function("jwt_rs256", |b| {
        b.iter(|| match Credentials::parse(black_box(&bearer_header)) {
            Some(Credentials::Bearer(token)) => black_box(tokens.bearer(token, now)).is_ok(),
            _ => false,
        })
    });
    // The first request with a JWT (or any after a token reload): the full
    // verification, RSA signature check included. A fresh table per
    // iteration, built outside the timing.
    group.bench_function("jwt_rs256_first_use", |b| {
        b.iter_batched(
            || table(&secret_text, 100),
            |fresh| match Credentials::parse(black_box(&bearer_header)) {
                Some(Credentials::Bearer(token)) => black_box(fresh.bearer(token, now)).is_ok(),
                _ => false,
            },
            criterion::BatchSize::LargeInput,
        )
    });
    // Refusals are never remembered: each of these is the full path every
    // time. A wrong signature, an unknown kid and
    // an algorithm the key is not registered for should cost the same.
    let token = bearer_header.trim_start_matches("Bearer ").to_owned();
    // One character inside the signature changed (not the last, whose low
    // bits are padding that base64 refuses to see set).
    let at = token.len() - 10;
    let flipped = if token.as_bytes()[at] == b'A' {
        "B"
    } else {
        "A"
    };
    let bad_signature = format!("{}{flipped}{}", &token[..at], &token[at + 1..]);
    let refusals = [
        ("jwt_bad_signature", bad_signature),
        ("jwt_unknown_kid", jwt_as(Algorithm::RS256, "nobody", now)),
        (
            "jwt_unregistered_algorithm",
            jwt_as(Algorithm::RS512, "epd-7", now),
        ),
    ];
    for (name, refused) in &refusals {
        assert!(tokens.bearer(refused, now).is_err(), "{name} is refused");
        group.bench_function(*name, |b| {
            b.iter(|| black_box(tokens.bearer(black_box(refused), now)).is_err())
        });
    }
    // The floor under jwt_rs256: the RS256 signature check alone (ring,
    // through jsonwebtoken), on the same token and key. What jwt_rs256 takes
    // beyond it is ours: parsing, header and claim rules, the key lookup.
    let (signing_input, signature) = token.rsplit_once('.').expect("three segments");
    let key = jsonwebtoken::DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).expect("fixture key");
    group.bench_function("rs256_signature_only", |b| {
        b.iter(|| {
            jsonwebtoken::crypto::verify(
                black_box(signature),
                black_box(signing_input.as_bytes()),
                &key,
                Algorithm::RS256,
            )
            .unwrap_or(false)
        })
    });
    group.finish();
}

criterion_group!(benches, authentication);
criterion_main!(benches);
