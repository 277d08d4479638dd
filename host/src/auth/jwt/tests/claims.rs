//! The claims: audience, issuer, subject, required claims and times.

use super::*;

// --- aud, iss, required claims -----------------------------------------

#[test]
fn a_missing_aud_is_refused() {
    let token = sign(Algorithm::RS256, &without_claim("aud"));
    assert_eq!(check(&token), Err(JwtError::MissingClaim("aud")));
}

#[test]
fn a_wrong_aud_is_refused() {
    for aud in ["API", "api ", "https://example.org/api", ""] {
        let token = sign(Algorithm::RS256, &with_claim("aud", json!(aud)));
        assert_eq!(check(&token), Err(JwtError::Audience), "{aud}");
    }
}

#[test]
fn an_aud_array_without_api_is_refused() {
    for aud in [
        json!([]),
        json!(["web", "admin"]),
        json!(["API"]),
        json!(["other"]),
        json!(["API", "apis"]),
    ] {
        let token = sign(Algorithm::RS256, &with_claim("aud", aud.clone()));
        assert_eq!(check(&token), Err(JwtError::Audience), "{aud}");
    }
    for aud in [
        json!(["api", 1]),
        json!([["api"]]),
        json!({ "api": true }),
        json!(1),
        json!(null),
    ] {
        let token = sign(Algorithm::RS256, &with_claim("aud", aud.clone()));
        assert_eq!(check(&token), Err(JwtError::InvalidClaim("aud")), "{aud}");
    }
}

#[test]
fn an_aud_array_containing_api_is_accepted() {
    let token = sign(Algorithm::RS256, &with_claim("aud", json!(["web", "api"])));
    assert!(check(&token).is_ok());
}

#[test]
fn a_missing_iss_is_refused() {
    let token = sign(Algorithm::RS256, &without_claim("iss"));
    assert_eq!(check(&token), Err(JwtError::MissingClaim("iss")));
    for iss in [json!(""), json!(1), json!(null)] {
        let token = sign(Algorithm::RS256, &with_claim("iss", iss.clone()));
        assert_eq!(check(&token), Err(JwtError::InvalidClaim("iss")), "{iss}");
    }
}

#[test]
fn a_missing_exp_is_refused() {
    let token = sign(Algorithm::RS256, &without_claim("exp"));
    assert_eq!(check(&token), Err(JwtError::MissingClaim("exp")));
}

#[test]
fn a_missing_iat_is_refused() {
    let token = sign(Algorithm::RS256, &without_claim("iat"));
    assert_eq!(check(&token), Err(JwtError::MissingClaim("iat")));
}

#[test]
fn a_non_string_or_empty_sub_is_refused() {
    for sub in [json!(42), json!(""), json!(null), json!(["dossier-1"])] {
        let token = sign(Algorithm::RS256, &with_claim("sub", sub.clone()));
        assert_eq!(check(&token), Err(JwtError::InvalidClaim("sub")), "{sub}");
    }
}

// --- times -------------------------------------------------------------

#[test]
fn a_lifetime_over_an_hour_is_refused() {
    for (iat, exp) in [
        (NOW, NOW + 3601),
        (NOW - 3000, NOW + 3000),
        (NOW, NOW + 86_400 * 365),
    ] {
        let token = sign(Algorithm::RS256, &times(iat, exp));
        assert_eq!(
            check(&token),
            Err(JwtError::LifetimeTooLong),
            "{iat}..{exp}"
        );
    }
}

#[test]
fn a_lifetime_of_3600_seconds_is_accepted() {
    let token = sign(Algorithm::RS256, &times(NOW, NOW + 3600));
    assert!(check(&token).is_ok());
}

#[test]
fn exp_not_after_iat_is_refused() {
    for exp in [NOW, NOW - 1] {
        let token = sign(Algorithm::RS256, &times(NOW, exp));
        assert_eq!(check(&token), Err(JwtError::InvalidClaim("exp")), "{exp}");
    }
}

#[test]
fn iat_61_seconds_in_the_future_is_refused() {
    let token = sign(Algorithm::RS256, &times(NOW + 61, NOW + 600));
    assert_eq!(check(&token), Err(JwtError::IssuedInFuture));
}

#[test]
fn a_token_issued_two_minutes_ahead_is_good_once_the_clock_reaches_iat() {
    let token = sign(Algorithm::RS256, &times(NOW + 120, NOW + 600));
    assert_eq!(check(&token), Err(JwtError::IssuedInFuture));
    assert!(check_at(&token, NOW + 120).is_ok());
}

#[test]
fn iat_59_and_60_seconds_in_the_future_is_accepted() {
    for skew in [59, 60] {
        let token = sign(Algorithm::RS256, &times(NOW + skew, NOW + 600));
        assert!(check(&token).is_ok(), "{skew}");
    }
}

#[test]
fn nbf_beyond_the_leeway_is_refused() {
    let token = sign(Algorithm::RS256, &with_claim("nbf", json!(NOW + 61)));
    assert_eq!(check(&token), Err(JwtError::NotYetValid));
    let token = sign(Algorithm::RS256, &with_claim("nbf", json!(NOW + 300)));
    assert_eq!(check(&token), Err(JwtError::NotYetValid));
    // The same token is good once the clock reaches nbf.
    assert!(check_at(&token, NOW + 300).is_ok());
}

#[test]
fn nbf_within_the_leeway_or_past_is_accepted() {
    for nbf in [NOW + 60, NOW, NOW - 100] {
        let token = sign(Algorithm::RS256, &with_claim("nbf", json!(nbf)));
        assert!(check(&token).is_ok(), "{nbf}");
    }
}

#[test]
fn times_that_are_not_integers_are_refused() {
    for (name, value) in [
        ("exp", json!((NOW + 600).to_string())),
        ("exp", json!(NOW as f64 + 600.5)),
        ("iat", json!(NOW.to_string())),
        ("nbf", json!("0")),
        ("exp", json!(null)),
    ] {
        let token = sign(Algorithm::RS256, &with_claim(name, value.clone()));
        assert_eq!(
            check(&token),
            Err(JwtError::InvalidClaim(name)),
            "{name}: {value}"
        );
    }
}

#[test]
fn a_token_expired_beyond_the_leeway_is_refused() {
    let token = sign(Algorithm::RS256, &claims());
    let exp = NOW + 600;
    assert_eq!(check_at(&token, exp + 61), Err(JwtError::Expired));
    assert_eq!(check_at(&token, exp + 60), Err(JwtError::Expired));
    assert_eq!(check_at(&token, exp + 100_000), Err(JwtError::Expired));
}

#[test]
fn a_token_expired_within_the_leeway_is_accepted() {
    let token = sign(Algorithm::RS256, &claims());
    let exp = NOW + 600;
    for now in [exp - 1, exp, exp + 1, exp + 59] {
        assert!(check_at(&token, now).is_ok(), "{now}");
    }
}

#[test]
fn a_float_exp_is_refused() {
    let float = format!(
        r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":{}.0}}"#,
        NOW + 600
    );
    assert_eq!(
        check(&with_payload(&float)),
        Err(JwtError::InvalidClaim("exp"))
    );
    let exponent = format!(r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":1.7500006e9}}"#);
    assert_eq!(
        check(&with_payload(&exponent)),
        Err(JwtError::InvalidClaim("exp"))
    );
    let string = format!(
        r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":"{}"}}"#,
        NOW + 600
    );
    assert_eq!(
        check(&with_payload(&string)),
        Err(JwtError::InvalidClaim("exp"))
    );
    let huge = format!(r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":18446744073709551615}}"#);
    assert_eq!(
        check(&with_payload(&huge)),
        Err(JwtError::InvalidClaim("exp"))
    );
    let float_iat = format!(
        r#"{{"iss":"client","aud":"api","iat":{NOW}.5,"exp":{}}}"#,
        NOW + 600
    );
    assert_eq!(
        check(&with_payload(&float_iat)),
        Err(JwtError::InvalidClaim("iat"))
    );
}

#[test]
fn extreme_timestamps_do_not_overflow() {
    let whole_range = sign(Algorithm::RS256, &times(i64::MIN, i64::MAX));
    for now in [i64::MIN, NOW, i64::MAX] {
        assert_eq!(check_at(&whole_range, now), Err(JwtError::LifetimeTooLong));
    }
    let at_the_top = sign(Algorithm::RS256, &times(i64::MAX - 10, i64::MAX));
    assert_eq!(check(&at_the_top), Err(JwtError::IssuedInFuture));
    assert!(check_at(&at_the_top, i64::MAX).is_ok());
    let at_the_bottom = sign(Algorithm::RS256, &times(i64::MIN, i64::MIN + 10));
    assert_eq!(check(&at_the_bottom), Err(JwtError::Expired));
    assert!(check_at(&at_the_bottom, i64::MIN).is_ok());
}
