//! API tokens and their registered JWT public keys, as stored. Parsing of
//! rights and allow-lists belongs to the auth module; the store keeps text.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::{Store, StoreError};
use crate::domain::time::{from_millis, to_millis};

/// A token as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub id: i64,
    pub consumer_key: String,
    /// SHA-256 of the secret, lower-case hex.
    pub secret_sha256: String,
    /// Comma-separated endpoint groups.
    pub rights: String,
    /// Comma-separated addresses and CIDR ranges; empty = anywhere.
    pub ip_allow: String,
    /// Comma-separated origins (`https://host[:port]`).
    pub allowed_origins: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Authenticates with JWTs only: HTTP Basic is refused.
    pub jwt_only: bool,
    /// Registered RSA public keys, oldest first.
    pub public_keys: Vec<StoredKey>,
}

/// A registered JWT key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The public key as registered (PEM).
    pub pem: String,
    /// Lower-case hex SHA-256 of its DER.
    pub fingerprint: String,
    /// The algorithms it verifies, comma-separated (`RS256`, `RS512`).
    pub algorithms: String,
}

/// A token to be created.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub consumer_key: String,
    pub secret_sha256: String,
    pub rights: String,
    pub ip_allow: String,
    pub allowed_origins: String,
    /// Authenticates with JWTs only: HTTP Basic is refused.
    pub jwt_only: bool,
    /// The webhook signing key, as [`StoredSecret`] text.
    pub webhook_secret: StoredSecret,
}

/// A secret the host must be able to use (a token's webhook signing key),
/// as stored text; auth reads it. Never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredSecret(pub String);

impl std::fmt::Debug for StoredSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoredSecret(..)")
    }
}

impl Store {
    /// Every token, revoked ones included, by id, with their keys. One
    /// query, so a token and its keys are read from the same snapshot.
    pub async fn tokens(&self) -> Result<Vec<StoredToken>, StoreError> {
        let rows = sqlx::query(
            "SELECT t.id, t.consumer_key, t.secret_sha256, t.rights, t.ip_allow, t.allowed_origins, t.created_at, \
             t.revoked_at, t.jwt_only, k.public_key_pem, k.fingerprint, k.algorithms \
             FROM api_tokens t LEFT JOIN api_token_keys k ON k.token_id = t.id ORDER BY t.id, k.id",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut tokens: Vec<StoredToken> = Vec::new();
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let key = match row.try_get::<Option<String>, _>("public_key_pem")? {
                Some(pem) => Some(StoredKey {
                    pem,
                    fingerprint: row.try_get("fingerprint")?,
                    algorithms: row.try_get("algorithms")?,
                }),
                None => None,
            };
            if let Some(last) = tokens.last_mut().filter(|t| t.id == id) {
                last.public_keys.extend(key);
                continue;
            }
            tokens.push(StoredToken {
                id,
                consumer_key: row.try_get("consumer_key")?,
                secret_sha256: row.try_get("secret_sha256")?,
                rights: row.try_get("rights")?,
                ip_allow: row.try_get("ip_allow")?,
                allowed_origins: row.try_get("allowed_origins")?,
                created_at: from_millis(row.try_get("created_at")?),
                revoked_at: row
                    .try_get::<Option<i64>, _>("revoked_at")?
                    .map(from_millis),
                jwt_only: row.try_get::<i64, _>("jwt_only")? != 0,
                public_keys: key.into_iter().collect(),
            });
        }
        Ok(tokens)
    }

    /// Creates a token; false when the consumer key is taken.
    pub async fn create_token(
        &self,
        token: NewToken,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let inserted = sqlx::query(
                        "INSERT INTO api_tokens (consumer_key, secret_sha256, rights, ip_allow, allowed_origins, created_at, \
                         jwt_only, webhook_secret) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (consumer_key) DO NOTHING",
                    )
                    .bind(&token.consumer_key)
                    .bind(&token.secret_sha256)
                    .bind(&token.rights)
                    .bind(&token.ip_allow)
                    .bind(&token.allowed_origins)
                    .bind(to_millis(now))
                    .bind(i64::from(token.jwt_only))
                    .bind(&token.webhook_secret.0)
                    .execute(&mut *conn)
                    .await?;
                    Ok(inserted.rows_affected() == 1)
                })
            })
            .await
    }

    /// Revokes a token; false when there is no such (unrevoked) token.
    pub async fn revoke_token(
        &self,
        consumer_key: String,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let done = sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE consumer_key = $2 AND revoked_at IS NULL")
                        .bind(to_millis(now))
                        .bind(&consumer_key)
                        .execute(&mut *conn)
                        .await?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    /// Makes a token JWT-only: HTTP Basic is refused from the next token
    /// reload on, and the stored secret hash is replaced by `secret_sha256`
    /// (that of a secret nobody was shown). False when there is no such
    /// token.
    pub async fn make_token_jwt_only(
        &self,
        consumer_key: String,
        secret_sha256: String,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let done = sqlx::query(
                        "UPDATE api_tokens SET jwt_only = 1, secret_sha256 = $1 WHERE consumer_key = $2",
                    )
                    .bind(&secret_sha256)
                    .bind(&consumer_key)
                    .execute(&mut *conn)
                    .await?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    /// Replaces the webhook signing key of an unrevoked token; false when
    /// there is no such token. Callbacks sent from then on are signed with
    /// the new key, queued ones included.
    pub async fn set_webhook_secret(
        &self,
        consumer_key: String,
        secret: StoredSecret,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let done = sqlx::query("UPDATE api_tokens SET webhook_secret = $1 WHERE consumer_key = $2 AND revoked_at IS NULL")
                        .bind(&secret.0)
                        .bind(&consumer_key)
                        .execute(&mut *conn)
                        .await?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    /// The consumer keys of the tokens that have a webhook signing key.
    pub async fn tokens_with_webhook_secret(&self) -> Result<Vec<String>, StoreError> {
        let keys: Vec<(String,)> = sqlx::query_as(
            "SELECT consumer_key FROM api_tokens WHERE webhook_secret IS NOT NULL ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(keys.into_iter().map(|(k,)| k).collect())
    }

    /// Sets where alarms raised by responses an unrevoked token stores are
    /// delivered (docs/api/alarms.md#delivery); None: to the global
    /// endpoint. False when there is no such token. Deliveries queued
    /// already keep their destination.
    pub async fn set_alarm_webhook_url(
        &self,
        consumer_key: String,
        url: Option<String>,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let done = sqlx::query("UPDATE api_tokens SET alarm_webhook_url = $1 WHERE consumer_key = $2 AND revoked_at IS NULL")
                        .bind(url)
                        .bind(&consumer_key)
                        .execute(&mut *conn)
                        .await?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    /// The tokens that have an alarm endpoint of their own: consumer key
    /// and URL.
    pub async fn token_alarm_webhooks(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT consumer_key, alarm_webhook_url FROM api_tokens WHERE alarm_webhook_url IS NOT NULL ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Registers a public key for JWTs with `kid` = this consumer key, for
    /// `algorithms` (comma-separated) only; false when the token does not
    /// exist. Registering a key again sets its algorithms (pins a key that
    /// was registered before algorithms were recorded).
    pub async fn add_token_key(
        &self,
        consumer_key: String,
        key: StoredKey,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let Some(row) = sqlx::query("SELECT id FROM api_tokens WHERE consumer_key = $1")
                        .bind(&consumer_key)
                        .fetch_optional(&mut *conn)
                        .await?
                    else {
                        return Ok(false);
                    };
                    let token_id: i64 = row.try_get(0)?;
                    sqlx::query(
                        "INSERT INTO api_token_keys (token_id, public_key_pem, fingerprint, algorithms, created_at) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (token_id, fingerprint) DO UPDATE SET algorithms = excluded.algorithms",
                    )
                    .bind(token_id)
                    .bind(&key.pem)
                    .bind(&key.fingerprint)
                    .bind(&key.algorithms)
                    .bind(to_millis(now))
                    .execute(&mut *conn)
                    .await?;
                    Ok(true)
                })
            })
            .await
    }
}
