//! Unit tests of the verifier and the key reader, with the shared fixtures
//! and token builders. The forged tokens of the black-box suite are here
//! too, run against [`verify`] directly: the black-box suite keeps a few
//! representatives that prove every refusal becomes the same 401.

mod algorithms;
mod claims;
mod duplicates;
mod header;
mod keys;
mod signatures;

use std::cell::{Cell, RefCell};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::der::{DER_INTEGER, DER_SEQUENCE};
use super::*;

const KID: &str = "client-1";
const NOW: i64 = 1_750_000_000;

const PRIVATE_PEM: &[u8] = include_bytes!("../../../../../tests/fixtures/keys/rsa2048.pem");
const PUBLIC_PEM: &str = include_str!("../../../../../tests/fixtures/keys/rsa2048.pub.pem");
const PUBLIC_PKCS1_PEM: &str =
    include_str!("../../../../../tests/fixtures/keys/rsa2048-pkcs1.pub.pem");
const OTHER_PRIVATE_PEM: &[u8] = include_bytes!("../../../../../tests/fixtures/keys/other2048.pem");
const OTHER_PUBLIC_PEM: &str = include_str!("../../../../../tests/fixtures/keys/other2048.pub.pem");
const RSA1024_PUBLIC_PEM: &str = include_str!("../../../../../tests/fixtures/keys/rsa1024.pub.pem");
const RSA4096_PUBLIC_PEM: &str = include_str!("../../../../../tests/fixtures/keys/rsa4096.pub.pem");
const EC_PUBLIC_PEM: &str = include_str!("../../../../../tests/fixtures/keys/ec256.pub.pem");

/// The modulus of other2048.pub.pem, base64url, for a `jwk` header:
/// `openssl rsa -pubin -in other2048.pub.pem -modulus -noout`, hex to
/// bytes to base64url.
const OTHER_MODULUS_B64URL: &str = "vXtMUOSmEnkG_MAx5Hn0mOsSZB5JiDqD54Hf5TM_jjTH_F7xm7NaIfn7Ls8Ovg9mx7tuuYM-wT3vUhQKsq4jEzXgiOHzdNitRqWdxkLrXJwzTUzQ9VOmy9Ej21Kg8z25wvmW833DwKemI2C1b33x-wVFn2A99kpElrVYh7Ce3vfhXGCTZRDSzJs3U0dz2SFcuQE0bgqjNCrnsxW6o8bhsp12lyFA8coU01eQGwcbFSIQvfG_gyyt9kT2x7h8xCbE7BPrISuFvTz0iUWiovcPEEv1C4BotWdQNRaSXzljId7-WV3RXiyfBE5rw101nkwv0lOha5MVMDpmkFV9OZqBvQ";

/// `openssl pkey -pubin -in rsa2048.pub.pem -outform DER | sha256sum`
const PUBLIC_FINGERPRINT: &str = "712ac111864ae1bc68e0708e046ef3c9448468e92225267099a63fe3c44c25b3";

fn private_key() -> EncodingKey {
    EncodingKey::from_rsa_pem(PRIVATE_PEM).expect("fixture private key")
}

fn public_key() -> RsaPublicKey {
    RsaPublicKey::from_pem(PUBLIC_PEM).expect("fixture public key")
}

/// The fixture key registered for these algorithms.
fn registered(algorithms: &[KeyAlgorithm]) -> RegisteredKey {
    RegisteredKey::new(public_key(), algorithms.to_vec()).expect("at least one algorithm")
}

/// The fixture key as registered before algorithms were recorded: both.
fn registered_for_both() -> RegisteredKey {
    registered(&[KeyAlgorithm::Rs256, KeyAlgorithm::Rs512])
}

fn claims() -> Value {
    json!({ "iss": "client", "aud": "api", "iat": NOW, "exp": NOW + 600, "sub": "dossier-1" })
}

/// A properly signed token with the standard header {typ, alg, kid}.
fn sign(alg: Algorithm, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(KID.to_owned());
    jsonwebtoken::encode(&header, claims, &private_key()).expect("sign")
}

fn b64(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// A hand-built token from raw header and payload text, signed with the
/// given key and algorithm so that only the rule under test is broken.
fn raw_signed(header: &str, payload: &str, alg: Algorithm, key: &EncodingKey) -> String {
    let input = format!("{}.{}", b64(header), b64(payload));
    let signature = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).expect("sign");
    format!("{input}.{signature}")
}

/// A hand-built token whose header is given as text, with the standard
/// claims, validly RS256-signed with the registered key.
fn with_header(header: &str) -> String {
    raw_signed(
        header,
        &claims().to_string(),
        Algorithm::RS256,
        &private_key(),
    )
}

/// A validly RS256-signed token with the standard header and these claims.
fn with_payload(payload: &str) -> String {
    raw_signed(
        &json!({ "typ": "JWT", "alg": "RS256", "kid": KID }).to_string(),
        payload,
        Algorithm::RS256,
        &private_key(),
    )
}

/// The sizes of the keys registered: the fixture key's (2048 bits).
fn stand_ins() -> StandIns {
    StandIns::of([&registered_for_both()])
}

fn check_at(token: &str, now: i64) -> Result<VerifiedJwt, JwtError> {
    verify(token, now, &stand_ins(), |kid| {
        (kid == KID).then(registered_for_both)
    })
}

fn check(token: &str) -> Result<VerifiedJwt, JwtError> {
    check_at(token, NOW)
}

fn with_claim(name: &str, value: Value) -> Value {
    let mut c = claims();
    c[name] = value;
    c
}

fn without_claim(name: &str) -> Value {
    let mut c = claims();
    if let Some(map) = c.as_object_mut() {
        map.remove(name);
    }
    c
}

fn times(iat: i64, exp: i64) -> Value {
    let mut c = with_claim("iat", json!(iat));
    c["exp"] = json!(exp);
    c
}
