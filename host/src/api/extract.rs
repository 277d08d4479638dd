//! Extractors that answer bad input with the documented error bodies instead
//! of axum's plain-text rejections: JSON bodies, query strings with Rails
//! style arrays and hashes, and path parameters.
//!
//! `JsonObject`: 415, 413, 400. `QueryParams`: Rails-style `a[]=` arrays
//! and `a[b]=` hashes. `DossierPath`: an empty id is 404, one over 255
//! characters (or with control characters) 422. What each takes is a rule
//! of `rules.rs`, which also writes its schema in the OpenAPI document.

use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde_json::{Map, Value};

use super::rules::{self, Refused};
use crate::AppState;
use crate::error::{ApiError, Errors};

/// A request body that is a JSON object (docs/api/conventions.md#request-bodies:
/// 415 unless declared JSON, 400 when it is not JSON or not an object, 413
/// beyond the configured size, 408 when it does not arrive in time).
#[derive(Debug)]
pub struct JsonObject(pub Map<String, Value>);

impl FromRequest<AppState> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        check_content_type(req.headers())?;
        let limit = state.config().body_limit;
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(ApiError::TooLarge);
        }
        let bytes = axum::body::to_bytes(req.into_body(), limit)
            .await
            .map_err(|e| {
                let cause = e.into_inner();
                if cause
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    ApiError::TooLarge
                } else if crate::server::is_body_timeout(&*cause) {
                    ApiError::RequestTimeout
                } else {
                    // The client's connection failed mid-body.
                    ApiError::MalformedJson
                }
            })?;
        // serde_json refuses nesting deeper than 128 levels, so hostile
        // depth is a parse error, not a stack overflow.
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonObject(map)),
            _ => Err(ApiError::MalformedJson),
        }
    }
}

/// Accepts `application/json` with or without parameters and any
/// `application/*+json` type; refuses other types and a missing
/// Content-Type with 415. A browser sends a cross-site POST without asking
/// first (a CORS preflight) only with no type or a form's or plain text's,
/// so refusing those keeps a page on another site from making a browser
/// that holds credentials for this service write with them.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(ApiError::UnsupportedMediaType);
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

/// The query string as ordered pairs, read the way Rails clients write
/// arrays and hashes: `k[]=a&k[]=b`, `k=a&k=b` and `f[k][]=x`
/// (docs/api/conventions.md#query-parameters).
#[derive(Debug, Default)]
pub struct QueryParams(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(QueryParams::parse(parts.uri.query().unwrap_or_default()))
    }
}

impl QueryParams {
    pub fn parse(query: &str) -> QueryParams {
        QueryParams(
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The last value given for `key` (as `key` or `key[]`).
    pub fn single(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key || is_array_key(k, key))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, given as `key[]`, `key[N]` or repeated `key`;
    /// None when the key is absent.
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        let values: Vec<String> = self
            .0
            .iter()
            .filter(|(k, _)| k == key || is_array_key(k, key))
            .map(|(_, v)| v.clone())
            .collect();
        (!values.is_empty()).then_some(values)
    }

    /// Every pair as given, in order (to write a link to another page of
    /// the same query).
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// True when any key is `key` or starts with `key[`.
    pub fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| {
            k == key
                || k.strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with('['))
        })
    }

    /// A boolean parameter ([`rules::BOOLEAN`]); 422 `invalid` otherwise.
    pub fn boolean(&self, key: &str, default: bool) -> Result<bool, ApiError> {
        match self.single(key) {
            None => Ok(default),
            Some(text) => {
                rules::boolean(text).ok_or_else(|| ApiError::Invalid(Errors::one(key, "invalid")))
            }
        }
    }
}

/// `key[]` or `key[<digits>]`.
fn is_array_key(candidate: &str, key: &str) -> bool {
    candidate
        .strip_prefix(key)
        .and_then(|rest| rest.strip_prefix('['))
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|inner| inner.bytes().all(|b| b.is_ascii_digit()))
}

/// The dossier named by the path (`:dossier_id` / `:epd_id`): the EPD's own
/// identifier, as [`rules::DOSSIER_ID`] has it.
#[derive(Debug, Clone)]
pub struct DossierPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for DossierPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let params = PathParams::from_request_parts(parts, state).await?;
        let id = params
            .get("dossier_id")
            .ok_or(ApiError::NotFound("dossier_id"))?;
        match rules::DOSSIER_ID.check(id) {
            Ok(()) => Ok(DossierPath(id.to_owned())),
            Err(Refused::Blank) => Err(ApiError::NotFound("dossier_id")),
            Err(Refused::Invalid) => Err(ApiError::Invalid(Errors::one("dossier_id", "invalid"))),
        }
    }
}

/// All path parameters, percent-decoded. A path that does not decode to
/// UTF-8 names nothing: 404.
#[derive(Debug)]
pub struct PathParams(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for PathParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::NotFound("base"))?;
        Ok(PathParams(params))
    }
}

impl PathParams {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A numeric id parameter ([`rules::POSITIVE_ID`]); anything else
    /// names nothing (404 `field`).
    pub fn id(&self, name: &str, field: &'static str) -> Result<i64, ApiError> {
        self.get(name)
            .and_then(|v| rules::POSITIVE_ID.parse(v))
            .ok_or(ApiError::NotFound(field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_come_in_three_spellings() {
        let q = QueryParams::parse("k%5B%5D=a&k[]=b&other=x");
        assert_eq!(q.list("k"), Some(vec!["a".to_owned(), "b".to_owned()]));
        let q = QueryParams::parse("k=a&k=b");
        assert_eq!(q.list("k"), Some(vec!["a".to_owned(), "b".to_owned()]));
        let q = QueryParams::parse("filters[questionnaire_keys][]=phq9&filters[completed_after]=5");
        assert_eq!(
            q.list("filters[questionnaire_keys]"),
            Some(vec!["phq9".to_owned()])
        );
        assert_eq!(q.single("filters[completed_after]"), Some("5"));
        assert!(q.has("filters"));
        assert_eq!(q.list("k"), None);
        assert_eq!(
            QueryParams::parse("k[0]=a&k[1]=b").list("k"),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
    }

    #[test]
    fn booleans_are_strict() {
        let q = QueryParams::parse("a=false&b=1&c=maybe");
        assert!(!q.boolean("a", true).expect("valid"));
        assert!(q.boolean("b", false).expect("valid"));
        assert!(q.boolean("c", true).is_err());
        assert!(q.boolean("d", true).expect("default"));
    }

    #[test]
    fn json_content_types_are_recognised() {
        let mut h = HeaderMap::new();
        assert!(check_content_type(&h).is_err(), "none given");
        h.insert(
            header::CONTENT_TYPE,
            "application/json; charset=utf-8".parse().expect("valid"),
        );
        assert!(check_content_type(&h).is_ok());
        h.insert(
            header::CONTENT_TYPE,
            "application/vnd.api+json".parse().expect("valid"),
        );
        assert!(check_content_type(&h).is_ok());
        for refused in [
            "text/plain",
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
            "json",
            "text/json+json",
        ] {
            h.insert(header::CONTENT_TYPE, refused.parse().expect("valid"));
            assert!(check_content_type(&h).is_err(), "{refused}");
        }
    }
}
