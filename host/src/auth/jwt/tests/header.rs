//! The kid, header parameters, size and structure.

use super::*;

// --- kid ---------------------------------------------------------------

#[test]
fn a_missing_empty_or_non_string_kid_is_refused() {
    for header in [
        json!({ "typ": "JWT", "alg": "RS256" }),
        json!({ "typ": "JWT", "alg": "RS256", "kid": "" }),
        json!({ "typ": "JWT", "alg": "RS256", "kid": null }),
        json!({ "typ": "JWT", "alg": "RS256", "kid": 1 }),
        json!({ "typ": "JWT", "alg": "RS256", "kid": [KID] }),
    ] {
        let result = check(&with_header(&header.to_string()));
        assert!(
            matches!(result, Err(JwtError::Kid(_))),
            "{header}: {result:?}"
        );
    }
}

#[test]
fn an_unknown_kid_is_refused() {
    // Kids are compared exactly: no case folding, no trimming.
    for unknown in ["client-2", "nobody", "CLIENT-1", "client-1 ", " client-1"] {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": unknown }).to_string();
        assert_eq!(
            check(&with_header(&header)),
            Err(JwtError::UnknownKey),
            "{unknown:?}"
        );
    }
}

#[test]
fn a_kid_with_path_characters_is_unknown_and_the_real_kid_still_verifies() {
    for hostile in [
        "../client-1",
        "./client-1",
        "client-1/../client-1",
        "../../../../etc/passwd",
        "/dev/null",
        "..%2Fclient-1",
        "..\\client-1",
    ] {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": hostile }).to_string();
        assert_eq!(
            check(&with_header(&header)),
            Err(JwtError::UnknownKey),
            "{hostile}"
        );
    }
    assert!(check(&sign(Algorithm::RS256, &claims())).is_ok());
}

#[test]
fn path_and_sql_characters_in_a_kid_make_it_merely_unknown() {
    for hostile in [
        "../x",
        "../../etc/passwd",
        "' OR 1=1 --",
        "\"; DROP TABLE api_tokens; --",
        "%00",
        "ü🔑",
    ] {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": hostile }).to_string();
        let seen = RefCell::new(None);
        let result = verify(&with_header(&header), NOW, &stand_ins(), |kid| {
            *seen.borrow_mut() = Some(kid.to_owned());
            None
        });
        assert_eq!(result, Err(JwtError::UnknownKey), "{hostile}");
        assert_eq!(seen.borrow().as_deref(), Some(hostile));
    }
}

#[test]
fn a_kid_with_control_characters_is_refused_before_lookup() {
    for hostile in [
        "client-1\n",
        "client\u{0}1",
        "\u{1b}[2J",
        "a\u{7f}",
        "b\u{85}",
    ] {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": hostile }).to_string();
        let result = verify(&with_header(&header), NOW, &stand_ins(), |_| {
            panic!("looked up {hostile:?}")
        });
        assert!(
            matches!(result, Err(JwtError::Kid(_))),
            "{hostile:?}: {result:?}"
        );
    }
}

#[test]
fn a_kid_over_255_bytes_is_refused_and_255_bytes_is_looked_up() {
    let long = "k".repeat(256);
    let header = json!({ "typ": "JWT", "alg": "RS256", "kid": long }).to_string();
    assert!(matches!(
        check(&with_header(&header)),
        Err(JwtError::Kid(_))
    ));
    // Multi-byte characters count in bytes: 128 × "é" is 256 bytes.
    let header = json!({ "typ": "JWT", "alg": "RS256", "kid": "é".repeat(128) }).to_string();
    assert!(matches!(
        check(&with_header(&header)),
        Err(JwtError::Kid(_))
    ));

    let max = "k".repeat(255);
    let header = json!({ "typ": "JWT", "alg": "RS256", "kid": max }).to_string();
    assert_eq!(check(&with_header(&header)), Err(JwtError::UnknownKey));
}

// --- header parameters -------------------------------------------------

#[test]
fn jwk_jku_x5u_and_x5c_in_the_header_are_refused() {
    let jwk = json!({ "kty": "RSA", "n": "AQAB", "e": "AQAB" });
    for (param, value) in [
        ("jwk", jwk),
        ("jku", json!("https://attacker.example/jwks.json")),
        ("x5u", json!("https://attacker.example/cert.pem")),
        ("x5c", json!(["MIIB"])),
    ] {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": KID, param: value }).to_string();
        assert_eq!(
            check(&with_header(&header)),
            Err(JwtError::KeyInHeader(param)),
            "{param}"
        );
        // Even a null value counts: the parameter must not be there at all.
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": KID, param: null }).to_string();
        assert_eq!(
            check(&with_header(&header)),
            Err(JwtError::KeyInHeader(param)),
            "{param}"
        );
    }
}

#[test]
fn a_key_or_key_url_in_the_header_is_refused_whichever_key_signed() {
    // The attacker's key offered as a JWK, or a URL to fetch keys from,
    // signed with that key or with the registered one: a token never
    // brings keys.
    let jwk = json!({ "kty": "RSA", "e": "AQAB", "n": OTHER_MODULUS_B64URL, "kid": KID });
    let other = EncodingKey::from_rsa_pem(OTHER_PRIVATE_PEM).expect("other key");
    for (param, value) in [
        ("jwk", jwk),
        (
            "jku",
            json!("https://attacker.example/.well-known/jwks.json"),
        ),
        ("x5u", json!("https://attacker.example/cert.pem")),
        (
            "x5c",
            json!(["MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"]),
        ),
    ] {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": KID, param: value }).to_string();
        for key in [&other, &private_key()] {
            let token = raw_signed(&header, &claims().to_string(), Algorithm::RS256, key);
            assert_eq!(check(&token), Err(JwtError::KeyInHeader(param)), "{param}");
        }
    }
}

#[test]
fn crit_in_the_header_is_refused() {
    let header = json!({ "typ": "JWT", "alg": "RS256", "kid": KID, "crit": ["b64"], "b64": false })
        .to_string();
    assert_eq!(check(&with_header(&header)), Err(JwtError::Critical));
}

#[test]
fn a_missing_typ_is_refused() {
    let header = json!({ "alg": "RS256", "kid": KID }).to_string();
    assert_eq!(check(&with_header(&header)), Err(JwtError::Type));
}

#[test]
fn a_typ_other_than_jwt_is_refused() {
    for typ in [
        json!("JWS"),
        json!("at+jwt"),
        json!("jwt "),
        json!("application/json"),
        json!(""),
        json!(null),
        json!(1),
    ] {
        let header = json!({ "typ": typ, "alg": "RS256", "kid": KID }).to_string();
        assert_eq!(check(&with_header(&header)), Err(JwtError::Type), "{typ}");
    }
}

// --- size and structure ------------------------------------------------

#[test]
fn a_token_over_8_kib_is_refused() {
    let big = sign(
        Algorithm::RS256,
        &with_claim("pad", json!("x".repeat(MAX_TOKEN_BYTES))),
    );
    assert!(big.len() > MAX_TOKEN_BYTES);
    let result = verify(&big, NOW, &stand_ins(), |_| {
        panic!("no lookup for an oversized token")
    });
    assert_eq!(result, Err(JwtError::TooLarge));
    // Just under the limit is fine.
    let fits = sign(
        Algorithm::RS256,
        &with_claim("pad", json!("x".repeat(5500))),
    );
    assert!(fits.len() <= MAX_TOKEN_BYTES, "{}", fits.len());
    assert!(check(&fits).is_ok());
}

#[test]
fn two_segments_are_refused() {
    let token = sign(Algorithm::RS256, &claims());
    let two: Vec<&str> = token.split('.').take(2).collect();
    assert!(matches!(check(&two.join(".")), Err(JwtError::Malformed(_))));
}

#[test]
fn four_or_more_segments_and_empty_input_are_refused() {
    let token = sign(Algorithm::RS256, &claims());
    for bad in [
        format!("{token}."),
        format!("{token}.{token}"),
        String::new(),
        "..".to_owned(),
        ".".to_owned(),
    ] {
        assert!(matches!(check(&bad), Err(JwtError::Malformed(_))), "{bad}");
    }
}

#[test]
fn garbage_base64_is_refused() {
    let token = sign(Algorithm::RS256, &claims());
    let mut parts = token.split('.');
    let (h, p, s) = (
        parts.next().expect("header"),
        parts.next().expect("payload"),
        parts.next().expect("signature"),
    );
    let padded_header = STANDARD.encode(r#"{"typ":"JWT","alg":"RS256","kid":"client-1"}"#);
    for bad in [
        format!("!!!.{p}.{s}"),
        format!("{h}.%%%.{s}"),
        format!("{h}.{p}.***"),
        format!("{h}.{p}.{s}="),
        format!("{h} .{p}.{s}"),
        format!("{h}.{p}.{s}\n"),
        format!("{padded_header}.{p}.{s}"),
        format!("{}.{p}.{s}", h.replace('-', "+").replace('_', "/") + "+/"),
        format!("{h}.{p}.A"),
    ] {
        let result = verify(&bad, NOW, &stand_ins(), |_| panic!("no lookup for {bad}"));
        assert!(
            matches!(result, Err(JwtError::Malformed(_))),
            "{bad}: {result:?}"
        );
    }
}

#[test]
fn a_header_that_is_not_a_json_object_is_refused() {
    for header in [
        "[]",
        r#"["typ","JWT"]"#,
        "\"JWT\"",
        "null",
        "not json",
        "{\"alg\":\"RS256\"",
        "\u{feff}{}",
    ] {
        let result = check(&with_header(header));
        assert!(
            matches!(result, Err(JwtError::Malformed(_))),
            "{header}: {result:?}"
        );
    }
    let latin1 = format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(b"{\"alg\":\"\xe9\"}"),
        b64("{}"),
        b64("x")
    );
    assert!(matches!(check(&latin1), Err(JwtError::Malformed(_))));
}

#[test]
fn a_payload_that_is_a_json_array_is_refused() {
    let payload = format!(
        r#"[{{"iss":"client","aud":"api","iat":{NOW},"exp":{}}}]"#,
        NOW + 600
    );
    assert!(matches!(
        check(&with_payload(&payload)),
        Err(JwtError::Malformed(_))
    ));
    for other in ["\"api\"", "42", "null", "not json"] {
        assert!(
            matches!(check(&with_payload(other)), Err(JwtError::Malformed(_))),
            "{other}"
        );
    }
}

#[test]
fn mangled_tokens_never_panic_and_are_never_accepted() {
    let token = sign(Algorithm::RS256, &claims());
    for end in 0..token.len() {
        let prefix = token.get(..end).unwrap_or_default();
        assert!(check(prefix).is_err(), "prefix of {end} bytes");
    }
    let bytes = token.as_bytes();
    for i in (0..bytes.len()).step_by(7) {
        for replacement in [b'.', b'A', b'-', b'_', b'=', 0u8, 0xff] {
            let mut mangled = bytes.to_vec();
            if let Some(b) = mangled.get_mut(i) {
                if *b == replacement {
                    continue;
                }
                *b = replacement;
            }
            let text = String::from_utf8_lossy(&mangled);
            assert!(check(&text).is_err(), "byte {i} -> {replacement}");
        }
    }
}
