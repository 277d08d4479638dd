//! Keys pinned to their algorithm (RFC 8725 section 3.1), and the cost of a
//! refusal at the key stage: an unknown `kid`, a key not registered for the
//! token's `alg` and a wrong signature each cost one RSA verification, of
//! a size some registered key has.

use super::*;
use crate::auth::jwt::RSA_CHECKS;

fn pinned(alg: KeyAlgorithm) -> RegisteredKey {
    registered(&[alg])
}

fn check_with(token: &str, key: RegisteredKey) -> Result<VerifiedJwt, JwtError> {
    verify(token, NOW, &stand_ins(), |kid| (kid == KID).then_some(key))
}

/// RSA verifications `f` made on this thread.
fn rsa_checks_of<T>(f: impl FnOnce() -> T) -> (T, u32) {
    let before = RSA_CHECKS.with(Cell::get);
    let out = f();
    (out, RSA_CHECKS.with(Cell::get) - before)
}

#[test]
fn a_key_registered_for_rs256_refuses_an_rs512_token_and_the_reverse() {
    let rs256 = sign(Algorithm::RS256, &claims());
    let rs512 = sign(Algorithm::RS512, &claims());
    assert!(check_with(&rs256, pinned(KeyAlgorithm::Rs256)).is_ok());
    assert_eq!(
        check_with(&rs512, pinned(KeyAlgorithm::Rs256)),
        Err(JwtError::AlgorithmNotRegistered("RS512"))
    );
    assert!(check_with(&rs512, pinned(KeyAlgorithm::Rs512)).is_ok());
    assert_eq!(
        check_with(&rs256, pinned(KeyAlgorithm::Rs512)),
        Err(JwtError::AlgorithmNotRegistered("RS256"))
    );
}

#[test]
fn a_token_relabelled_to_the_registered_algorithm_does_not_verify() {
    // An RS512 signature under a header that claims RS256, for a key
    // pinned to RS256: the pinned algorithm is what checks it.
    let rs512 = sign(Algorithm::RS512, &claims());
    let (_, rest) = rs512.split_once('.').expect("three segments");
    let relabelled = format!(
        "{}.{rest}",
        b64(&json!({ "typ": "JWT", "alg": "RS256", "kid": KID }).to_string())
    );
    assert_eq!(
        check_with(&relabelled, pinned(KeyAlgorithm::Rs256)),
        Err(JwtError::Signature)
    );
}

#[test]
fn during_a_rotation_each_key_verifies_its_own_algorithm() {
    let other = RsaPublicKey::from_pem(OTHER_PUBLIC_PEM).expect("other public");
    let keys = vec![
        RegisteredKey::pinned(other, KeyAlgorithm::Rs256),
        pinned(KeyAlgorithm::Rs512),
    ];
    let lookup = |keys: Vec<RegisteredKey>| move |_: &str| Some(((), keys));
    let rs512 = sign(Algorithm::RS512, &claims());
    assert!(verify_with(&rs512, NOW, &stand_ins(), lookup(keys.clone())).is_ok());
    // The RS256 token is tried against the other (RS256) key only.
    let rs256 = sign(Algorithm::RS256, &claims());
    assert_eq!(
        verify_with(&rs256, NOW, &stand_ins(), lookup(keys)).map(|_| ()),
        Err(JwtError::Signature)
    );
}

#[test]
fn stored_algorithm_lists_are_read_exactly() {
    assert_eq!(
        KeyAlgorithm::parse_list("RS256,RS512"),
        Ok(vec![KeyAlgorithm::Rs256, KeyAlgorithm::Rs512])
    );
    assert_eq!(
        KeyAlgorithm::parse_list("RS512"),
        Ok(vec![KeyAlgorithm::Rs512])
    );
    for bad in [
        "",
        "rs256",
        "RS256 ",
        "RS256,RS256",
        "RS384",
        "RS256,,RS512",
        "none",
    ] {
        assert!(KeyAlgorithm::parse_list(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        KeyAlgorithm::to_list(&[KeyAlgorithm::Rs256, KeyAlgorithm::Rs512]),
        "RS256,RS512"
    );
    assert!(RegisteredKey::new(public_key(), Vec::new()).is_err());
}

#[test]
fn an_unknown_kid_costs_one_verification_like_a_wrong_signature() {
    let good = sign(Algorithm::RS256, &claims());
    let (input, _) = good.rsplit_once('.').expect("three segments");
    // A signature of the right size that verifies nothing.
    let wrong = format!("{input}.{}", URL_SAFE_NO_PAD.encode([0x42u8; 256]));
    let unknown_kid = raw_signed(
        &json!({ "typ": "JWT", "alg": "RS256", "kid": "nobody" }).to_string(),
        &claims().to_string(),
        Algorithm::RS256,
        &private_key(),
    );
    let rs512 = sign(Algorithm::RS512, &claims());
    let key = || pinned(KeyAlgorithm::Rs256);

    let (result, cost) = rsa_checks_of(|| check_with(&wrong, key()));
    assert_eq!(
        (result, cost),
        (Err(JwtError::Signature), 1),
        "wrong signature"
    );
    let (result, cost) = rsa_checks_of(|| check_with(&unknown_kid, key()));
    assert_eq!(
        (result, cost),
        (Err(JwtError::UnknownKey), 1),
        "unknown kid"
    );
    let (result, cost) = rsa_checks_of(|| check_with(&rs512, key()));
    assert_eq!(
        (result, cost),
        (Err(JwtError::AlgorithmNotRegistered("RS512")), 1),
        "algorithm not registered"
    );
    // A kid whose token has no key at all is unknown, at the same cost.
    let (result, cost) = rsa_checks_of(|| {
        verify_with(&good, NOW, &stand_ins(), |_| {
            Some(((), Vec::<RegisteredKey>::new()))
        })
    });
    assert_eq!((result.map(|_| ()), cost), (Err(JwtError::UnknownKey), 1));

    // A 4096-bit-sized signature where only 2048-bit keys are registered:
    // every registered key refuses it before any arithmetic, so no
    // stand-in checks it either, known kid or not.
    let big = |token: &str, bytes: usize| {
        let (input, _) = token.rsplit_once('.').expect("three segments");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(vec![0x42u8; bytes]))
    };
    let (result, cost) = rsa_checks_of(|| check_with(&big(&good, 512), key()));
    assert_eq!((result, cost), (Err(JwtError::Signature), 0));
    let (result, cost) = rsa_checks_of(|| check_with(&big(&unknown_kid, 512), key()));
    assert_eq!((result, cost), (Err(JwtError::UnknownKey), 0));
    // Once a 4096-bit key is registered anywhere, the stand-in of that size
    // checks it, for a known and an unknown kid alike.
    let other = RsaPublicKey::from_pem(RSA4096_PUBLIC_PEM).expect("4096-bit key");
    let both = StandIns::of([&key(), &RegisteredKey::pinned(other, KeyAlgorithm::Rs256)]);
    let with_both = |token: &str| verify(token, NOW, &both, |kid| (kid == KID).then(key));
    let (result, cost) = rsa_checks_of(|| with_both(&big(&good, 512)));
    assert_eq!((result, cost), (Err(JwtError::Signature), 1));
    let (result, cost) = rsa_checks_of(|| with_both(&big(&unknown_kid, 512)));
    assert_eq!((result, cost), (Err(JwtError::UnknownKey), 1));

    // A signature no RSA key can have is refused before any arithmetic,
    // known kid or not.
    let (_, cost) = rsa_checks_of(|| check_with(&format!("{input}.AAAA"), key()));
    assert_eq!(cost, 0);
    let (unknown_input, _) = unknown_kid.rsplit_once('.').expect("three segments");
    let (_, cost) = rsa_checks_of(|| check_with(&format!("{unknown_input}.AAAA"), key()));
    assert_eq!(cost, 0);

    // A valid token costs one too.
    let (result, cost) = rsa_checks_of(|| check_with(&good, key()));
    assert!(result.is_ok());
    assert_eq!(cost, 1);
}
