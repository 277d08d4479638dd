//! `/api/v1/docs`: the OpenAPI document as an interactive page (Swagger
//! UI). Every byte comes from the binary: the page and its initializer
//! from `api/docs/`, Swagger UI's script and stylesheet from the
//! `utoipa-swagger-ui` crate, which embeds the release that its
//! `utoipa-swagger-ui-vendored` dependency ships (no download at build
//! time, no CDN at run time). The page's Content-Security-Policy admits
//! scripts, styles and connections of this service only, and no inline
//! script. Not authenticated, like the document; trying an endpoint from
//! the page sends the credentials the reader enters, as any client would.

use std::sync::{Arc, LazyLock};

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The page's policy. `img-src data:`: Swagger UI's stylesheet draws its
/// icons as inline SVG images.
pub const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

const PAGE: &str = include_str!("docs/index.html");
const INITIALIZER: &str = include_str!("docs/initializer.js");

/// The files of Swagger UI's distribution the page loads, and only those.
const SWAGGER_FILES: [&str; 3] = [
    "swagger-ui.css",
    "swagger-ui-bundle.js",
    "favicon-32x32.png",
];

/// What `utoipa_swagger_ui::serve` wants; its own initializer (which would
/// use this) is never served.
static CONFIG: LazyLock<Arc<utoipa_swagger_ui::Config<'static>>> =
    LazyLock::new(|| Arc::new(utoipa_swagger_ui::Config::new(["/api/v1/openapi.json"])));

/// API reference
///
/// The OpenAPI document as an interactive page (Swagger UI), served with
/// its scripts from this service; no other origin is contacted.
#[utoipa::path(get, path = "/api/v1/docs", tag = "operations", responses(
    (status = 200, description = "HTML page", content_type = "text/html; charset=utf-8"),
))]
pub async fn page() -> Response {
    answer("text/html; charset=utf-8", PAGE.as_bytes().to_vec(), false)
}

/// API reference files
///
/// The script, stylesheet and icon of the reference page.
#[utoipa::path(get, path = "/api/v1/docs/{file}", tag = "operations",
    params(("file" = String, Path, description = "`initializer.js`, `swagger-ui-bundle.js`, `swagger-ui.css` or `favicon-32x32.png`")),
    responses(
        (status = 200, description = "The file"),
        (status = 404, description = "`{\"errors\":{\"base\":[\"not_found\"]}}`: no such file", body = crate::error::ErrorBody),
    ),
)]
pub async fn file(Path(file): Path<String>) -> Response {
    if file == "initializer.js" {
        return answer(
            "text/javascript; charset=utf-8",
            INITIALIZER.as_bytes().to_vec(),
            true,
        );
    }
    if !SWAGGER_FILES.contains(&file.as_str()) {
        return ApiError::NotFound("base").into_response();
    }
    match utoipa_swagger_ui::serve(&file, Arc::clone(&CONFIG)) {
        Ok(Some(found)) => answer(&found.content_type, found.bytes.into_owned(), true),
        Ok(None) => ApiError::NotFound("base").into_response(),
        Err(e) => {
            ApiError::Internal(anyhow::anyhow!("serving {file} of Swagger UI: {e}")).into_response()
        }
    }
}

/// `bytes` as `content_type` under the page's headers; the files may be
/// kept for an hour (they change only with the binary), the page not.
fn answer(content_type: &str, bytes: Vec<u8>, cacheable: bool) -> Response {
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    let content_type = HeaderValue::from_str(content_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if cacheable {
            "public, max-age=3600"
        } else {
            "no-store"
        }),
    );
    response
}
