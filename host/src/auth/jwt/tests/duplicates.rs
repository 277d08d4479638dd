//! Duplicate members in the header or the claims: refused, wherever they
//! are and whichever comes first (RFC 7515 section 4, RFC 7519 section 4).

use super::*;

fn standard_claims_text() -> String {
    claims().to_string()
}

#[test]
fn a_header_naming_alg_kid_or_typ_twice_is_refused_before_the_key_lookup() {
    for header in [
        r#"{"typ":"JWT","alg":"RS256","kid":"client-1","alg":"none"}"#,
        r#"{"typ":"JWT","alg":"none","kid":"client-1","alg":"RS256"}"#,
        r#"{"typ":"JWT","alg":"RS256","alg":"RS256","kid":"client-1"}"#,
        r#"{"typ":"JWT","alg":"RS256","kid":"client-1","kid":"client-2"}"#,
        r#"{"typ":"JWT","alg":"RS256","kid":"client-2","kid":"client-1"}"#,
        r#"{"typ":"JWT","typ":"JWT","alg":"RS256","kid":"client-1"}"#,
        r#"{"typ":"JWT","alg":"RS256","kid":"client-1","\u0061lg":"none"}"#,
        r#"{"typ":"JWT","alg":"RS256","kid":"client-1","x":{"a":1,"a":2}}"#,
    ] {
        let token = with_header(header);
        let result = verify(&token, NOW, &stand_ins(), |_| {
            panic!("looked up a key for {header}")
        });
        assert_eq!(result, Err(JwtError::DuplicateMember("header")), "{header}");
        assert_eq!(kid(&token), Err(JwtError::DuplicateMember("header")));
    }
}

#[test]
fn claims_naming_sub_exp_or_any_member_twice_are_refused_though_signed() {
    let c = standard_claims_text();
    let body = c
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .expect("object");
    for payload in [
        format!(r#"{{{body},"sub":"dossier-2"}}"#),
        format!(r#"{{"sub":"dossier-2",{body}}}"#),
        format!(r#"{{{body},"exp":{}}}"#, NOW + 3_000_000),
        format!(r#"{{{body},"aud":"other"}}"#),
        format!(r#"{{{body},"iss":"client"}}"#),
        format!(r#"{{{body},"\u0073ub":"dossier-1"}}"#),
        format!(r#"{{{body},"extra":{{"a":1,"a":1}}}}"#),
    ] {
        let result = check(&with_payload(&payload));
        assert_eq!(
            result,
            Err(JwtError::DuplicateMember("claims")),
            "{payload}"
        );
    }
    // The same claims once each verify.
    assert!(check(&with_payload(&c)).is_ok());
}
