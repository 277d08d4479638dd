//! What a verified token says, and the rules its claims must meet once its
//! signature verified: `iss`, `aud`, `iat`, `exp`, `nbf`, `sub`. All time
//! arithmetic is done in `i128`, so no timestamp can overflow.

use serde_json::{Map, Value};

use super::error::JwtError;
use super::limits::{LEEWAY_SECS, MAX_LIFETIME_SECS};

/// A token that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedJwt {
    /// The consumer_key of the API token whose key signed this JWT.
    pub kid: String,
    pub iss: String,
    /// The dossier identifier, when given; the caller checks it.
    pub sub: Option<String>,
    pub iat: i64,
    pub exp: i64,
    pub nbf: Option<i64>,
}

impl VerifiedJwt {
    /// Whether the time rules still hold at `now_unix`: everything else a
    /// verification checked depends only on the token's text, so a token
    /// verified before is valid now exactly when this holds (the same
    /// leeway; the clock may also have gone back).
    pub fn valid_at(&self, now_unix: i64) -> bool {
        let now = i128::from(now_unix);
        let leeway = i128::from(LEEWAY_SECS);
        let from = i128::from(self.nbf.map_or(self.iat, |nbf| nbf.max(self.iat)));
        from - leeway <= now && now < i128::from(self.exp) + leeway
    }
}

/// Claims, after the signature verified.
pub(super) fn check_claims(
    claims: &Map<String, Value>,
    kid: String,
    now_unix: i64,
) -> Result<VerifiedJwt, JwtError> {
    let iss = match claims.get("iss") {
        None => return Err(JwtError::MissingClaim("iss")),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(JwtError::InvalidClaim("iss")),
    };
    let sub = match claims.get("sub") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err(JwtError::InvalidClaim("sub")),
    };
    let iat = int_claim(claims, "iat")?.ok_or(JwtError::MissingClaim("iat"))?;
    let exp = int_claim(claims, "exp")?.ok_or(JwtError::MissingClaim("exp"))?;
    let nbf = int_claim(claims, "nbf")?;

    match claims.get("aud") {
        None => return Err(JwtError::MissingClaim("aud")),
        Some(Value::String(s)) => {
            if s != "api" {
                return Err(JwtError::Audience);
            }
        }
        Some(Value::Array(items)) => {
            if !items.iter().all(Value::is_string) {
                return Err(JwtError::InvalidClaim("aud"));
            }
            if !items.iter().any(|v| v.as_str() == Some("api")) {
                return Err(JwtError::Audience);
            }
        }
        Some(_) => return Err(JwtError::InvalidClaim("aud")),
    }

    let now = i128::from(now_unix);
    let leeway = i128::from(LEEWAY_SECS);
    let (iat_w, exp_w) = (i128::from(iat), i128::from(exp));
    if exp_w <= iat_w {
        return Err(JwtError::InvalidClaim("exp"));
    }
    if exp_w - iat_w > i128::from(MAX_LIFETIME_SECS) {
        return Err(JwtError::LifetimeTooLong);
    }
    if iat_w - leeway > now {
        return Err(JwtError::IssuedInFuture);
    }
    if let Some(nbf) = nbf
        && i128::from(nbf) - leeway > now
    {
        return Err(JwtError::NotYetValid);
    }
    if exp_w + leeway <= now {
        return Err(JwtError::Expired);
    }

    Ok(VerifiedJwt {
        kid,
        iss,
        sub,
        iat,
        exp,
        nbf,
    })
}

/// An integer claim: absent is `None`; anything but a JSON integer that fits
/// in i64 (floats, strings, null, exponent notation) is invalid.
fn int_claim(claims: &Map<String, Value>, name: &'static str) -> Result<Option<i64>, JwtError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or(JwtError::InvalidClaim(name)),
        Some(_) => Err(JwtError::InvalidClaim(name)),
    }
}
