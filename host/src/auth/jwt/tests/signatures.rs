//! Valid tokens, algorithms and signatures.

use super::*;

// --- valid tokens ------------------------------------------------------

#[test]
fn a_valid_rs256_token_is_accepted() {
    let verified = check(&sign(Algorithm::RS256, &claims())).expect("valid");
    assert_eq!(
        verified,
        VerifiedJwt {
            kid: KID.to_owned(),
            iss: "client".to_owned(),
            sub: Some("dossier-1".to_owned()),
            iat: NOW,
            exp: NOW + 600,
            nbf: None,
        }
    );
}

#[test]
fn a_valid_rs512_token_is_accepted() {
    let verified = check(&sign(Algorithm::RS512, &claims())).expect("valid");
    assert_eq!(verified.kid, KID);
    assert_eq!(verified.exp, NOW + 600);
}

#[test]
fn a_token_without_sub_is_accepted_with_sub_none() {
    let verified = check(&sign(Algorithm::RS256, &without_claim("sub"))).expect("valid");
    assert_eq!(verified.sub, None);
}

#[test]
fn pkcs1_and_spki_forms_of_the_same_key_both_verify() {
    let spki = RsaPublicKey::from_pem(PUBLIC_PEM).expect("spki");
    let pkcs1 = RsaPublicKey::from_pem(PUBLIC_PKCS1_PEM).expect("pkcs1");
    assert_eq!(spki.modulus_bits(), 2048);
    assert_eq!(pkcs1.modulus_bits(), 2048);
    for alg in [Algorithm::RS256, Algorithm::RS512] {
        let token = sign(alg, &claims());
        for key in [&spki, &pkcs1] {
            let verified = verify(&token, NOW, &stand_ins(), |_| {
                Some(RegisteredKey::pinned(
                    key.clone(),
                    KeyAlgorithm::parse(match alg {
                        Algorithm::RS256 => "RS256",
                        _ => "RS512",
                    })?,
                ))
            });
            assert!(verified.is_ok(), "{alg:?} with {key:?}: {verified:?}");
        }
    }
}

#[test]
fn kid_reads_the_kid_after_the_header_rules() {
    assert_eq!(kid(&sign(Algorithm::RS256, &claims())), Ok(KID.to_owned()));
    let none = format!(
        "{}.{}.",
        b64(r#"{"typ":"JWT","alg":"none","kid":"client-1"}"#),
        b64("{}")
    );
    assert!(matches!(kid(&none), Err(JwtError::Algorithm(_))));
    let missing = with_header(r#"{"typ":"JWT","alg":"RS256"}"#);
    assert!(matches!(kid(&missing), Err(JwtError::Kid(_))));
}

#[test]
fn the_key_lookup_is_called_once_with_the_kid_and_not_at_all_for_a_bad_header() {
    let calls = RefCell::new(Vec::new());
    let result = verify(
        &sign(Algorithm::RS256, &claims()),
        NOW,
        &stand_ins(),
        |kid| {
            calls.borrow_mut().push(kid.to_owned());
            Some(registered_for_both())
        },
    );
    assert!(result.is_ok());
    assert_eq!(*calls.borrow(), vec![KID.to_owned()]);

    let called = Cell::new(false);
    let bad = with_header(r#"{"typ":"JWT","alg":"HS256","kid":"client-1"}"#);
    let result = verify(&bad, NOW, &stand_ins(), |_| {
        called.set(true);
        Some(registered_for_both())
    });
    assert!(matches!(result, Err(JwtError::Algorithm(_))));
    assert!(!called.get());
}

// --- algorithms --------------------------------------------------------

#[test]
fn alg_none_is_refused_in_every_spelling_with_and_without_signature() {
    let payload = b64(&claims().to_string());
    for spelling in ["none", "None", "NONE", "nOnE"] {
        let header = b64(&json!({ "typ": "JWT", "alg": spelling, "kid": KID }).to_string());
        let unsigned = format!("{header}.{payload}.");
        let signed = format!("{header}.{payload}.{}", b64("signature"));
        // A real RS256 signature over the same input changes nothing.
        let rs256 = with_header(&json!({ "typ": "JWT", "alg": spelling, "kid": KID }).to_string());
        for token in [unsigned, signed, rs256] {
            let result = check(&token);
            assert!(
                matches!(result, Err(JwtError::Algorithm(_))),
                "{spelling}: {token}: {result:?}"
            );
        }
    }
}

#[test]
fn hmac_signed_with_the_registered_public_key_pem_is_refused() {
    // The classic key-confusion attack: the public key is public, so an
    // HMAC "signed" with it proves nothing.
    for secret in [PUBLIC_PEM, PUBLIC_PEM.trim(), PUBLIC_PKCS1_PEM] {
        let key = EncodingKey::from_secret(secret.as_bytes());
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let mut header = Header::new(alg);
            header.kid = Some(KID.to_owned());
            let token = jsonwebtoken::encode(&header, &claims(), &key).expect("sign");
            assert!(
                matches!(check(&token), Err(JwtError::Algorithm(_))),
                "{alg:?}"
            );
        }
    }
}

#[test]
fn rs384_is_refused_even_with_a_valid_signature() {
    let token = sign(Algorithm::RS384, &claims());
    assert_eq!(
        check(&token),
        Err(JwtError::Algorithm("\"RS384\"".to_owned()))
    );
}

#[test]
fn pss_is_refused_even_with_a_valid_signature() {
    for alg in [Algorithm::PS256, Algorithm::PS512] {
        let token = sign(alg, &claims());
        assert!(
            matches!(check(&token), Err(JwtError::Algorithm(_))),
            "{alg:?}"
        );
    }
}

#[test]
fn every_other_algorithm_spelling_or_type_is_refused() {
    for alg in [
        json!("rs256"),
        json!("Rs256"),
        json!("RS256 "),
        json!("RS512\u{0}"),
        json!("PS512"),
        json!("ES256"),
        json!("EdDSA"),
        json!(""),
        json!(null),
        json!(256),
        json!(["RS256"]),
    ] {
        let header = json!({ "typ": "JWT", "alg": alg, "kid": KID }).to_string();
        let result = check(&with_header(&header));
        assert!(
            matches!(result, Err(JwtError::Algorithm(_))),
            "{alg}: {result:?}"
        );
    }
    let missing = with_header(&json!({ "typ": "JWT", "kid": KID }).to_string());
    assert!(matches!(check(&missing), Err(JwtError::Algorithm(_))));
}

#[test]
fn the_algorithm_in_the_error_is_escaped_and_truncated() {
    let hostile = format!("x\n\u{1b}[31m{}", "A".repeat(500));
    let header = json!({ "typ": "JWT", "alg": hostile, "kid": KID }).to_string();
    let Err(JwtError::Algorithm(shown)) = check(&with_header(&header)) else {
        panic!("expected an algorithm error");
    };
    assert!(!shown.chars().any(char::is_control), "{shown}");
    assert!(shown.len() < 60, "{shown}");
}

// --- signatures --------------------------------------------------------

#[test]
fn a_stripped_signature_is_refused() {
    let token = sign(Algorithm::RS256, &claims());
    let (input, _) = token.rsplit_once('.').expect("three segments");
    assert_eq!(check(&format!("{input}.")), Err(JwtError::SignatureMissing));
    assert!(matches!(check(input), Err(JwtError::Malformed(_))));
    // A signature of three bytes that verifies nothing.
    assert_eq!(check(&format!("{input}.AAAA")), Err(JwtError::Signature));
}

#[test]
fn a_signature_by_another_key_is_refused() {
    let other = EncodingKey::from_rsa_pem(OTHER_PRIVATE_PEM).expect("other key");
    let header = json!({ "typ": "JWT", "alg": "RS256", "kid": KID }).to_string();
    let token = raw_signed(&header, &claims().to_string(), Algorithm::RS256, &other);
    assert_eq!(check(&token), Err(JwtError::Signature));
    // ... and the right token with the other key registered is refused too.
    let other_public = RsaPublicKey::from_pem(OTHER_PUBLIC_PEM).expect("other public");
    let good = sign(Algorithm::RS256, &claims());
    assert_eq!(
        verify(&good, NOW, &stand_ins(), |_| Some(RegisteredKey::pinned(
            other_public,
            KeyAlgorithm::Rs256
        ))),
        Err(JwtError::Signature)
    );
}

#[test]
fn a_tampered_payload_or_swapped_algorithm_is_refused() {
    let token = sign(Algorithm::RS256, &claims());
    let mut parts = token.split('.');
    let (header, _, signature) = (
        parts.next().expect("header"),
        parts.next().expect("payload"),
        parts.next().expect("signature"),
    );
    let forged = b64(&with_claim("sub", json!("dossier-2")).to_string());
    assert_eq!(
        check(&format!("{header}.{forged}.{signature}")),
        Err(JwtError::Signature)
    );

    // An RS256 signature presented as RS512.
    let rs512_header = b64(&json!({ "typ": "JWT", "alg": "RS512", "kid": KID }).to_string());
    let payload = b64(&claims().to_string());
    assert_eq!(
        check(&format!("{rs512_header}.{payload}.{signature}")),
        Err(JwtError::Signature)
    );
}
