//! The one HTTP error type. Every error answer carries
//! `{"errors": {...}}` with the status codes of docs/api/errors.md; internal
//! failures are logged with their whole cause chain and answered with a fixed
//! body, so database or plugin details never reach a client.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::store::StoreError;

/// The `errors` object: field name to codes, to a nested object of the same
/// kind, or (fill-out sessions only) to a bare string
/// (docs/api/errors.md#error-body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Errors(Map<String, Value>);

impl Errors {
    pub fn new() -> Self {
        Errors::default()
    }

    /// Adds `code` to the codes of `field`.
    pub fn add(&mut self, field: &str, code: &str) -> &mut Self {
        let entry = self
            .0
            .entry(field.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(codes) = entry
            && !codes.iter().any(|c| c == code)
        {
            codes.push(Value::String(code.to_owned()));
        }
        self
    }

    /// Puts a nested error object under `field`.
    pub fn nest(&mut self, field: &str, inner: Errors) -> &mut Self {
        self.0.insert(field.to_owned(), Value::Object(inner.0));
        self
    }

    /// Puts a bare string under `field` (the fill-out session shape,
    /// docs/api/fill-out.md#error-shapes).
    pub fn bare(&mut self, field: &str, code: &str) -> &mut Self {
        self.0
            .insert(field.to_owned(), Value::String(code.to_owned()));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether there is an error for `field`.
    pub fn has(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    /// The body `{"errors": {...}}`.
    pub fn body(&self) -> Value {
        serde_json::json!({ "errors": Value::Object(self.0.clone()) })
    }

    /// One field, one code.
    pub fn one(field: &str, code: &str) -> Errors {
        let mut e = Errors::new();
        e.add(field, code);
        e
    }

    /// Ok when empty, else a 422 with these errors.
    pub fn into_result(self) -> Result<(), ApiError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Invalid(self))
        }
    }
}

// The schema of what `ApiError` answers (its `errors().body()`), for the
// OpenAPI document; the doc comment below is the schema's description.
/// Every error answer: `{"errors": {...}}`. Field names (or `base`) map to
/// arrays of codes, to a nested object of the same kind (`answer_data`,
/// `filters`), or, for fill-out sessions only, to a bare string. Codes in
/// use: blank, invalid, missing, in_past, too_early, taken, not_found,
/// unknown_question, invalid_option, already_completed,
/// already_acknowledged, already_resolved, malformed_json,
/// too_large, request_timeout, unsupported_media_type, method_not_allowed,
/// too_many_requests, internal_error, unavailable.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"errors": {"external_id": ["taken"]}}))]
pub struct ErrorBody {
    #[schema(value_type = Object)]
    pub errors: serde_json::Value,
}

/// An error answer.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 404 naming the field or path segment that names nothing.
    #[error("not found: {0}")]
    NotFound(&'static str),
    /// 422 validation failure.
    #[error("invalid: {0:?}")]
    Invalid(Errors),
    /// 401: missing, malformed or wrong credentials, or a JWT that failed
    /// validation. Carries the `WWW-Authenticate` challenge to send.
    #[error("unauthorized")]
    Unauthorized(&'static str),
    /// 403 with `base` set to the reason.
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    /// 400: the body is not JSON, or not an object.
    #[error("malformed JSON")]
    MalformedJson,
    /// 413: the body is larger than the configured limit.
    #[error("body too large")]
    TooLarge,
    /// 408: the body did not arrive within the request body timeout; the
    /// connection is closed after the answer.
    #[error("request body timed out")]
    RequestTimeout,
    /// 415: the body is not declared as JSON (no Content-Type, or another).
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// 405: the path exists, the method does not.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 429: too many requests from this client address without valid
    /// credentials, or from this token; retry after this many seconds
    /// (docs/operations.md#rate-limits).
    #[error("too many requests; retry after {0} s")]
    TooManyRequests(u64),
    /// 503: the database does not answer, or the writer's queue stayed
    /// full past its deadline.
    #[error("unavailable: {0}")]
    Unavailable(#[source] StoreError),
    /// 500: a bug or an outage; logged, never shown.
    #[error("internal: {0:#}")]
    Internal(#[from] anyhow::Error),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) | StoreError::WriterGone | StoreError::Busy(_) => {
                ApiError::Unavailable(e)
            }
            other => ApiError::Internal(other.into()),
        }
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::MalformedJson => StatusCode::BAD_REQUEST,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn errors(&self) -> Errors {
        match self {
            ApiError::NotFound(field) => Errors::one(field, "not_found"),
            ApiError::Invalid(errors) => errors.clone(),
            ApiError::Unauthorized(_) => Errors::one("base", "unauthorized"),
            ApiError::Forbidden(reason) => Errors::one("base", reason),
            ApiError::MalformedJson => Errors::one("base", "malformed_json"),
            ApiError::TooLarge => Errors::one("base", "too_large"),
            ApiError::RequestTimeout => Errors::one("base", "request_timeout"),
            ApiError::UnsupportedMediaType => Errors::one("base", "unsupported_media_type"),
            ApiError::MethodNotAllowed => Errors::one("base", "method_not_allowed"),
            ApiError::TooManyRequests(_) => Errors::one("base", "too_many_requests"),
            ApiError::Unavailable(_) => Errors::one("base", "unavailable"),
            ApiError::Internal(_) => Errors::one("base", "internal_error"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Internal(e) => tracing::error!(error = format!("{e:#}"), "internal error"),
            ApiError::Unavailable(e) => tracing::warn!(error = %e, "database unavailable"),
            _ => {}
        }
        let mut response = json(self.status(), &self.errors().body());
        match self {
            ApiError::Unauthorized(challenge) => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    axum::http::HeaderValue::from_static(challenge),
                );
            }
            ApiError::TooManyRequests(seconds) => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, axum::http::HeaderValue::from(seconds));
            }
            _ => {}
        }
        if let ApiError::RequestTimeout = self {
            // The rest of the body may still come; the connection cannot
            // carry another request (RFC 9110 §15.5.9).
            response.headers_mut().insert(
                header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        response
    }
}

/// A JSON answer with the wire conventions of docs/api/conventions.md#answers.
pub fn json(status: StatusCode, body: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [
                (header::CONTENT_TYPE, "application/json; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::Internal(anyhow::anyhow!("serializing an answer: {e}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_many_requests_says_when_to_retry() {
        let response = ApiError::TooManyRequests(7).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
        assert_eq!(
            ApiError::TooManyRequests(7).errors().body(),
            serde_json::json!({"errors": {"base": ["too_many_requests"]}})
        );
    }

    #[test]
    fn a_full_write_queue_is_unavailable() {
        let busy = ApiError::from(StoreError::Busy(std::time::Duration::from_secs(5)));
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            busy.errors().body(),
            serde_json::json!({"errors": {"base": ["unavailable"]}})
        );
    }

    #[test]
    fn errors_nest_and_keep_codes_unique() {
        let mut inner = Errors::new();
        inner.add("v_1", "unknown_question");
        let mut e = Errors::new();
        e.add("external_id", "blank")
            .add("external_id", "blank")
            .nest("answer_data", inner);
        assert_eq!(
            e.body(),
            serde_json::json!({"errors": {"external_id": ["blank"], "answer_data": {"v_1": ["unknown_question"]}}})
        );
        let mut bare = Errors::new();
        bare.bare("questionnaire_keys", "missing");
        assert_eq!(
            bare.body(),
            serde_json::json!({"errors": {"questionnaire_keys": "missing"}})
        );
    }
}
