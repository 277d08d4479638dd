//! Reading registered public keys.

use super::*;

// --- keys --------------------------------------------------------------

#[test]
fn a_1024_bit_key_is_refused() {
    assert_eq!(
        RsaPublicKey::from_pem(RSA1024_PUBLIC_PEM).map(|k| k.modulus_bits()),
        Err(KeyError::TooSmall { bits: 1024 })
    );
}

#[test]
fn an_ec_key_is_refused() {
    assert_eq!(
        RsaPublicKey::from_pem(EC_PUBLIC_PEM).map(|_| ()),
        Err(KeyError::NotRsa)
    );
}

#[test]
fn private_keys_are_refused() {
    let pkcs8 = std::str::from_utf8(PRIVATE_PEM).expect("utf-8");
    assert_eq!(
        RsaPublicKey::from_pem(pkcs8).map(|_| ()),
        Err(KeyError::PrivateKey)
    );
    let pkcs1 = pkcs8.replace("PRIVATE KEY", "RSA PRIVATE KEY");
    assert_eq!(
        RsaPublicKey::from_pem(&pkcs1).map(|_| ()),
        Err(KeyError::PrivateKey)
    );
}

#[test]
fn garbage_and_odd_pem_are_refused() {
    let body: String = PUBLIC_PEM
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let cases: Vec<String> = vec![
        String::new(),
        "garbage".to_owned(),
        body.clone(),
        PUBLIC_PEM.replace("PUBLIC KEY", "CERTIFICATE"),
        PUBLIC_PEM.replace("-----END PUBLIC KEY-----", "-----END RSA PUBLIC KEY-----"),
        format!("{PUBLIC_PEM}{OTHER_PUBLIC_PEM}"),
        format!("{PUBLIC_PEM}trailing"),
        PUBLIC_PEM.replacen('M', "*", 1),
        PUBLIC_PEM.replace("PUBLIC KEY", "RSA PUBLIC KEY"), // SPKI body under a PKCS#1 label
        PUBLIC_PKCS1_PEM.replace("RSA PUBLIC KEY", "PUBLIC KEY"), // and the reverse
        "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n".to_owned(),
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode([0x30, 0x80, 0, 0])
        ),
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            "A".repeat(MAX_PEM_BYTES)
        ),
    ];
    for case in &cases {
        assert!(RsaPublicKey::from_pem(case).is_err(), "{case}");
    }
}

#[test]
fn pem_with_crlf_line_endings_and_surrounding_whitespace_is_accepted() {
    let crlf = format!("\n  {}\n\n", PUBLIC_PEM.replace('\n', "\r\n"));
    let key = RsaPublicKey::from_pem(&crlf).expect("crlf");
    assert_eq!(key.fingerprint(), PUBLIC_FINGERPRINT);
}

#[test]
fn the_fingerprint_is_the_sha256_of_the_der_and_stable() {
    let key = public_key();
    assert_eq!(key.fingerprint(), PUBLIC_FINGERPRINT);
    assert_eq!(public_key().fingerprint(), key.fingerprint());
    assert_eq!(key.clone().fingerprint(), PUBLIC_FINGERPRINT);
    // Another encoding of the same key is other DER, so another fingerprint.
    let pkcs1 = RsaPublicKey::from_pem(PUBLIC_PKCS1_PEM).expect("pkcs1");
    assert_eq!(
        pkcs1.fingerprint(),
        "cd164e76ee07eb4578f090e87b921d49bdaff1bfae992e0e00a88c67926139e4"
    );
    let other = RsaPublicKey::from_pem(OTHER_PUBLIC_PEM).expect("other");
    assert_ne!(other.fingerprint(), key.fingerprint());
}

#[test]
fn hand_built_der_edge_cases_are_refused() {
    // Modulus of exactly 2048 bits built by hand, exponent 65537: accepted.
    let n = {
        let mut n = vec![0x00, 0x80];
        n.extend(std::iter::repeat_n(0x01, 255));
        n
    };
    let pkcs1 = |n: &[u8], e: &[u8]| -> Vec<u8> {
        let mut body = der_tlv(DER_INTEGER, n);
        body.extend(der_tlv(DER_INTEGER, e));
        der_tlv(DER_SEQUENCE, &body)
    };
    let pem = |der: &[u8]| {
        format!(
            "-----BEGIN RSA PUBLIC KEY-----\n{}\n-----END RSA PUBLIC KEY-----\n",
            STANDARD.encode(der)
        )
    };
    let good = pkcs1(&n, &[0x01, 0x00, 0x01]);
    assert_eq!(
        RsaPublicKey::from_pem(&pem(&good)).map(|k| k.modulus_bits()),
        Ok(2048)
    );

    // Exponents: even, 1, too long.
    for e in [&[0x01, 0x00, 0x00][..], &[0x01], &[0x01, 0, 0, 0, 0, 1]] {
        assert_eq!(
            RsaPublicKey::from_pem(&pem(&pkcs1(&n, e))).map(|_| ()),
            Err(KeyError::Exponent)
        );
    }
    // Negative modulus (no sign byte), non-minimal integer, trailing data.
    let negative = pkcs1(n.get(1..).unwrap_or_default(), &[0x01, 0x00, 0x01]);
    assert!(RsaPublicKey::from_pem(&pem(&negative)).is_err());
    let mut padded = vec![0x00];
    padded.extend(&n);
    assert!(RsaPublicKey::from_pem(&pem(&pkcs1(&padded, &[0x01, 0x00, 0x01]))).is_err());
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(RsaPublicKey::from_pem(&pem(&trailing)).is_err());
    // 8208-bit modulus: larger than ring verifies.
    let mut huge = vec![0x00, 0x80];
    huge.extend(std::iter::repeat_n(0x01, 1025));
    assert_eq!(
        RsaPublicKey::from_pem(&pem(&pkcs1(&huge, &[0x01, 0x00, 0x01]))).map(|_| ()),
        Err(KeyError::TooLarge { bits: 8208 })
    );
}

fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend([0x81, len as u8]);
    } else {
        out.extend([0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend(content);
    out
}
