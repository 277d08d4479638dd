//! Secrets the service keeps in its database (the secret that signs
//! fill-out links, when none is configured) are stored encrypted, with
//! AES-256-GCM under a key that is not in the database: a key file,
//! readable by its owner only (docs/operations.md#secrets). A copy of the
//! database alone then reveals no secret, so read access to a backup is not
//! the power to make links into patients' questionnaires.
//!
//! A key file that others may read or write protects nothing, so one is
//! refused at start, with the command that fixes it: it must belong to the
//! service's user (then only that user may use it) or to root (then its
//! group may read it, as a secret store mounts it, but nobody else may).
//!
//! The sealed form is `aes256gcm:` and the hex of a random 96-bit nonce
//! followed by the ciphertext and its tag. The secret's name is the
//! associated data, so a sealed value moved to another name does not open.
//!
//! The same key also authenticates rows the service must be able to
//! believe although others may write the database (which scorer version
//! serves: `trials.rs`): HMAC-SHA256 under a key derived from it, over a
//! purpose and the row's fields ([`SecretsKey::mac`]).

use std::io::{Read as _, Write};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// What a sealed value starts with; a stored value without it is a secret
/// kept in plain text by an older version, to be sealed on start.
const PREFIX: &str = "aes256gcm:";

/// The length of the key in bytes (AES-256).
const KEY_LEN: usize = 32;

/// Why a key file or a sealed value cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AtRestError {
    #[error("the secrets key file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the secrets key file {0} does not hold 64 hexadecimal digits (a 256-bit key)")]
    BadKey(PathBuf),
    #[error("the secrets key file {path}: {problem}")]
    Exposed { path: PathBuf, problem: String },
    #[error(
        "a secret kept in the database does not open with this secrets key: every host of one \
         database must use the same secrets_key_file"
    )]
    WrongKey,
}

/// What the MAC key is derived with from the secrets key, so that no
/// value is ever both encrypted and authenticated under one key.
const MAC_KEY_LABEL: &[u8] = b"outcomes secrets key: row authentication v1";

/// The key that seals secrets kept in the database, and authenticates
/// rows the service writes for itself.
pub struct SecretsKey {
    sealing: LessSafeKey,
    mac: hmac::Key,
}

impl std::fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretsKey(..)")
    }
}

impl SecretsKey {
    /// The key in `path` (64 hex digits; white space around them is
    /// ignored), refused when others may read or write the file
    /// ([`exposure`]). A missing file is made with a new random key,
    /// readable and writable by its owner only; of hosts that make it at
    /// once, all end up with the one that was linked into place first.
    pub fn load_or_create(path: &Path) -> Result<SecretsKey, AtRestError> {
        let io = |source| AtRestError::Io {
            path: path.to_owned(),
            source,
        };
        match SecretsKey::load(path) {
            Err(AtRestError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            found => return found,
        }
        // A command run before the service ever started (`outcomes token
        // create` on a new machine) finds no data folder yet: make it, for
        // the service's user only, as the service would.
        if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(folder)
                .map_err(io)?;
        }
        let mut bytes = [0u8; KEY_LEN];
        fill(&mut bytes);
        let text = format!("{}\n", hex::encode(bytes));
        // Written whole under a temporary name, then linked into place,
        // which fails if another process was first.
        let mut suffix = [0u8; 8];
        fill(&mut suffix);
        let temporary = path.with_extension(format!("{}.tmp", hex::encode(suffix)));
        let written = write_private(&temporary, text.as_bytes());
        let linked = written.and_then(|()| std::fs::hard_link(&temporary, path));
        let _ = std::fs::remove_file(&temporary);
        match linked {
            Ok(()) => {
                tracing::info!(file = %path.display(), "made a new secrets key file; back it up, apart from the database's backups");
                SecretsKey::from_hex(text.trim(), path)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = read_private(path)?;
                SecretsKey::from_hex(text.trim(), path)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// The key in `path`, as [`SecretsKey::load_or_create`] reads it; a
    /// missing file is an error (`Io`, not found), not made: for commands
    /// whose work is useless under another key than the service's.
    pub fn load(path: &Path) -> Result<SecretsKey, AtRestError> {
        let text = read_private(path)?;
        SecretsKey::from_hex(text.trim(), path)
    }

    fn from_hex(text: &str, path: &Path) -> Result<SecretsKey, AtRestError> {
        let bytes: [u8; KEY_LEN] =
            hex::FromHex::from_hex(text).map_err(|_| AtRestError::BadKey(path.to_owned()))?;
        Ok(SecretsKey::from_bytes(&bytes))
    }

    /// A key of 32 bytes.
    fn from_bytes(bytes: &[u8; KEY_LEN]) -> SecretsKey {
        let key = UnboundKey::new(&AES_256_GCM, bytes)
            .unwrap_or_else(|_| unreachable!("AES-256-GCM takes a 32-byte key"));
        let derived = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, bytes), MAC_KEY_LABEL);
        SecretsKey {
            sealing: LessSafeKey::new(key),
            mac: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        }
    }

    /// The MAC (hex) of `message` for `purpose`: a MAC made for one
    /// purpose never checks for another.
    pub fn mac(&self, purpose: &str, message: &[u8]) -> String {
        let mut context = hmac::Context::with_key(&self.mac);
        context.update(purpose.as_bytes());
        context.update(&[0]);
        context.update(message);
        hex::encode(context.sign().as_ref())
    }

    /// Whether `tag` is the MAC of `message` for `purpose` (compared in
    /// constant time).
    pub fn mac_matches(&self, purpose: &str, message: &[u8], tag: &str) -> bool {
        let Ok(tag) = hex::decode(tag) else {
            return false;
        };
        let mut signed = Vec::with_capacity(purpose.len() + 1 + message.len());
        signed.extend_from_slice(purpose.as_bytes());
        signed.push(0);
        signed.extend_from_slice(message);
        hmac::verify(&self.mac, &signed, &tag).is_ok()
    }

    /// The stored form of the secret called `name`.
    pub fn seal(&self, name: &str, secret: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        fill(&mut nonce);
        let mut sealed = secret.as_bytes().to_vec();
        self.sealing
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(name.as_bytes()),
                &mut sealed,
            )
            .unwrap_or_else(|_| unreachable!("a secret is far below AES-GCM's length limit"));
        format!("{PREFIX}{}{}", hex::encode(nonce), hex::encode(&sealed))
    }

    /// The secret called `name` out of its stored form.
    pub fn open(&self, name: &str, stored: &str) -> Result<String, AtRestError> {
        let bytes = stored
            .strip_prefix(PREFIX)
            .and_then(|text| hex::decode(text).ok())
            .filter(|b| b.len() > NONCE_LEN)
            .ok_or(AtRestError::WrongKey)?;
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| AtRestError::WrongKey)?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .sealing
            .open_in_place(nonce, Aad::from(name.as_bytes()), &mut sealed)
            .map_err(|_| AtRestError::WrongKey)?;
        String::from_utf8(plain.to_vec()).map_err(|_| AtRestError::WrongKey)
    }
}

/// Whether a stored value is sealed (else it is a plain secret an older
/// version kept).
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

/// The text of the key file at `path` (a link is followed: secret stores
/// mount files through links), refused when others may use the file it
/// opened. A key file is 65 bytes; more than a few KiB is no key file.
fn read_private(path: &Path) -> Result<String, AtRestError> {
    let io = |source| AtRestError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let me = rustix::process::geteuid().as_raw();
    if let Some(problem) = exposure(meta.uid(), meta.mode(), me, path) {
        return Err(AtRestError::Exposed {
            path: path.to_owned(),
            problem,
        });
    }
    let mut text = String::new();
    file.take(4096)
        .read_to_string(&mut text)
        .map_err(|_| AtRestError::BadKey(path.to_owned()))?;
    Ok(text)
}

/// Why a key file of user `owner` with permission bits `mode` is not safe
/// for a service running as user `me`, with the command that makes it
/// so; None when it is. The owner may change the file and its mode, so it
/// must be the service's user or root. The service's own file is for that
/// user alone (0600 or 0400); a file of root's may be readable by its
/// group (how a secret store or an administrator gives it to the
/// service's group), but written by nobody else and read by no others.
pub fn exposure(owner: u32, mode: u32, me: u32, path: &Path) -> Option<String> {
    let mode = mode & 0o777;
    let path = path.display();
    if owner != me && owner != 0 {
        return Some(format!(
            "it belongs to user {owner}, who may read or replace it, not to this service's user \
             ({me}) or root; run `chown {me} {path} && chmod 600 {path}`"
        ));
    }
    if owner == me && mode & 0o077 != 0 {
        return Some(format!(
            "others may read or write it (mode {mode:04o}); run `chmod 600 {path}`"
        ));
    }
    if owner != me && mode & 0o027 != 0 {
        return Some(format!(
            "others may read it, or its group write it (mode {mode:04o}); run `chmod 640 {path}` \
             (a secret store: give the file mode 0440)"
        ));
    }
    None
}

/// Random bytes from the operating system.
fn fill(bytes: &mut [u8]) {
    SystemRandom::new()
        .fill(bytes)
        .unwrap_or_else(|_| panic!("the operating system gives no random bytes"));
}

/// Makes `path` (it must not exist) readable and writable by its owner
/// only, with `bytes`, on disk before it returns.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_in_a_folder_not_made_yet_makes_the_folder_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data").join("secrets.key");
        let made = SecretsKey::load_or_create(&path).expect("made");
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("data")), 0o700);
        assert_eq!(mode(&path), 0o600);
        let again = SecretsKey::load_or_create(&path).expect("read");
        assert_eq!(
            again.open("n", &made.seal("n", "s")).expect("same key"),
            "s"
        );
    }

    #[test]
    fn a_key_file_others_may_read_or_write_is_refused_with_the_fix() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("secrets.key");
        SecretsKey::load_or_create(&path).expect("made");
        let chmod = |mode| {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod")
        };
        for mode in [0o644, 0o604, 0o640, 0o620, 0o606, 0o666] {
            chmod(mode);
            let refused = SecretsKey::load_or_create(&path).expect_err("refused");
            let text = refused.to_string();
            assert!(matches!(refused, AtRestError::Exposed { .. }), "{text}");
            assert!(text.contains(&format!("mode {mode:04o}")), "{text}");
            assert!(
                text.contains(&format!("run `chmod 600 {}`", path.display())),
                "{text}"
            );
        }
        chmod(0o400);
        SecretsKey::load_or_create(&path).expect("read-only for its owner");
        chmod(0o600);
        SecretsKey::load_or_create(&path).expect("its owner's only");
        // Through a link, the file it names is judged.
        let link = dir.path().join("linked.key");
        std::os::unix::fs::symlink(&path, &link).expect("link");
        SecretsKey::load_or_create(&link).expect("a private file behind a link");
        chmod(0o644);
        assert!(SecretsKey::load_or_create(&link).is_err());
        chmod(0o600);
        // Another user's file, when the tests may give one away.
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&path, Some(54_321), None).expect("chown");
            let refused = SecretsKey::load_or_create(&path).expect_err("refused");
            assert!(
                refused.to_string().contains("belongs to user 54321"),
                "{refused}"
            );
        }
    }

    #[test]
    fn who_may_own_a_key_file_and_with_which_mode() {
        let path = Path::new("/k");
        let me = 1000;
        // The service's own: for it alone.
        assert_eq!(exposure(me, 0o100600, me, path), None);
        assert_eq!(exposure(me, 0o400, me, path), None);
        for mode in [0o640, 0o604, 0o660, 0o644, 0o610] {
            assert!(exposure(me, mode, me, path).is_some(), "{mode:o}");
        }
        // Root's: its group may read it, nobody else anything.
        assert_eq!(exposure(0, 0o440, me, path), None);
        assert_eq!(exposure(0, 0o640, me, path), None);
        for mode in [0o644, 0o660, 0o642] {
            let problem = exposure(0, mode, me, path).expect("refused");
            assert!(problem.contains("chmod 640 /k"), "{problem}");
        }
        // Anyone else's: refused whatever its mode.
        let problem = exposure(1001, 0o600, me, path).expect("refused");
        assert!(problem.contains("chown 1000 /k"), "{problem}");
        // Root running a command: its own file, for it alone.
        assert_eq!(exposure(0, 0o600, 0, path), None);
        assert!(exposure(0, 0o640, 0, path).is_some());
    }

    #[test]
    fn a_sealed_secret_opens_with_its_key_and_name_only() {
        let key = SecretsKey::from_bytes(&[7; KEY_LEN]);
        let sealed = key.seal("fill_out_links", "the secret");
        assert!(is_sealed(&sealed));
        assert!(!sealed.contains("the secret"));
        assert_eq!(
            key.open("fill_out_links", &sealed).expect("opens"),
            "the secret"
        );
        // A fresh nonce each time.
        assert_ne!(sealed, key.seal("fill_out_links", "the secret"));
        assert!(key.open("another_name", &sealed).is_err());
        let other = SecretsKey::from_bytes(&[8; KEY_LEN]);
        assert!(other.open("fill_out_links", &sealed).is_err());
        let mut flipped = sealed.clone();
        let last = if flipped.ends_with('0') { "1" } else { "0" };
        flipped.replace_range(flipped.len() - 1.., last);
        assert!(key.open("fill_out_links", &flipped).is_err());
        assert!(key.open("fill_out_links", "the secret").is_err());
        assert!(!is_sealed("the secret"));
    }

    #[test]
    fn a_mac_checks_for_its_key_purpose_and_message_only() {
        let key = SecretsKey::from_bytes(&[7; KEY_LEN]);
        let tag = key.mac("row", b"fields");
        assert_eq!(tag.len(), 64);
        assert!(key.mac_matches("row", b"fields", &tag));
        assert!(!key.mac_matches("row", b"fields!", &tag));
        assert!(!key.mac_matches("other", b"fields", &tag));
        // The purpose and the message do not run into each other.
        assert!(!key.mac_matches("ro", b"wfields", &tag));
        assert!(!key.mac_matches("row", b"fields", "not hex"));
        assert!(!key.mac_matches("row", b"fields", &tag[..62]));
        let other = SecretsKey::from_bytes(&[8; KEY_LEN]);
        assert!(!other.mac_matches("row", b"fields", &tag));
    }

    #[test]
    fn a_missing_key_file_is_made_private_and_read_back() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("secrets.key");
        let made = SecretsKey::load_or_create(&path).expect("made");
        let sealed = made.seal("n", "s");
        let read = SecretsKey::load_or_create(&path).expect("read");
        assert_eq!(read.open("n", &sealed).expect("same key"), "s");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("made").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Only the key file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
        std::fs::write(&path, "not a key").expect("write");
        assert!(matches!(
            SecretsKey::load_or_create(&path),
            Err(AtRestError::BadKey(_))
        ));
    }
}
