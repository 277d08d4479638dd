//! The compiled-module cache on disk: the folder, the key that
//! authenticates its artifacts, and reading and writing them. A compiled
//! artifact is native code that runs outside the sandbox, so one is handed
//! out only when its HMAC-SHA256, keyed by a secret only this host's user
//! can read, proves that a host holding that key wrote it under this very
//! name (module hash and engine key). Knows nothing of wasmtime: it keeps
//! and returns bytes (docs/operations.md#files-and-permissions).
//!
//! The folder is 0700 and refused when it is not ours or others may write
//! into it; the key file is 0600. An artifact is read once, without
//! following links; one is written to a new file, then renamed into place.
//! A process that dies between writing and renaming leaves the temporary
//! file, which the next [`ArtifactCache::open`] removes once it is older
//! than any write takes (another host on the same folder may be writing
//! one right now).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the MAC written after each artifact.
const TAG_LEN: usize = 32;

/// Bytes of the cache key.
const KEY_LEN: usize = 32;

/// Largest artifact read back; a larger file is refused unread. Compiled
/// scorers and calculators are a few hundred KiB.
const MAX_ARTIFACT_BYTES: u64 = 256 * 1024 * 1024;

/// What the MAC is over, before the file name and the bytes, so a tag
/// made for anything else never verifies here.
const CONTEXT: &[u8] = b"outcomes compiled plugin artifact v2\0";

/// How old a temporary file must be before [`ArtifactCache::open`]
/// removes it. Writing one takes well under a second, so one this old was
/// left by a process that died; a younger one may be another host's
/// write in progress.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

/// The artifact folder with its key. Only [`ArtifactCache::open`] makes
/// one, after the folder and the key passed their checks.
pub struct ArtifactCache {
    dir: PathBuf,
    key: [u8; KEY_LEN],
}

impl std::fmt::Debug for ArtifactCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactCache")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// What the cache holds under a name.
#[derive(Debug)]
pub enum Lookup {
    /// Nothing under that name.
    Missing,
    /// The artifact bytes, their MAC checked.
    Verified(Vec<u8>),
    /// Something is there but may not be used: why.
    Refused(String),
}

impl ArtifactCache {
    /// The cache in `dir`, keyed by the secret in `key_file`; both are made
    /// when missing (the folder 0700, the key file 0600). Refused (`Err`
    /// with the reason) when the folder is not ours or others may write
    /// it, or when the key file is not ours, others may read it, or it
    /// does not hold a key. Temporary files a crash left in the folder
    /// are removed.
    pub fn open(dir: &Path, key_file: &Path) -> Result<ArtifactCache, String> {
        let uid =
            private_dir(dir).map_err(|e| format!("plugin cache folder {}: {e}", dir.display()))?;
        let removed = remove_stale_temporaries(dir, SystemTime::now());
        if removed > 0 {
            tracing::info!(folder = %dir.display(), removed, "removed temporary files an earlier run left in the plugin cache");
        }
        let key = read_or_create_key(key_file, uid)
            .map_err(|e| format!("plugin cache key file {}: {e}", key_file.display()))?;
        Ok(ArtifactCache {
            dir: dir.to_owned(),
            key,
        })
    }

    /// The verified artifact stored under `name`. The file is opened
    /// without following a symbolic link, read once into memory, and its
    /// MAC checked in constant time over exactly those bytes.
    pub fn read(&self, name: &str) -> Lookup {
        let path = self.dir.join(name);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Missing,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Lookup::Refused("a symbolic link, not a file".into());
            }
            Err(e) => return Lookup::Refused(format!("cannot be opened: {e}")),
        };
        let bytes = match read_regular(file, MAX_ARTIFACT_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => return Lookup::Refused(e.to_string()),
        };
        match self.verified(name, bytes) {
            Some(artifact) => Lookup::Verified(artifact),
            None => Lookup::Refused(
                "its MAC does not match: not written by this host for this module".into(),
            ),
        }
    }

    /// Stores `artifact` under `name` with its MAC: written to a new file
    /// of a random name (created exclusively, never through a symbolic
    /// link, 0600) and renamed into place, so a reader never sees half a
    /// file and a rename never changes the bytes of one being read.
    pub fn write(&self, name: &str, artifact: &[u8]) -> io::Result<()> {
        let tag = self.tag(name, artifact);
        let (tmp, mut file) = create_temp(&self.dir, name)?;
        let written = file
            .write_all(artifact)
            .and_then(|()| file.write_all(&tag))
            .and_then(|()| std::fs::rename(&tmp, self.dir.join(name)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    fn mac(&self, name: &str, artifact: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(CONTEXT);
        mac.update(name.as_bytes());
        mac.update(b"\0");
        mac.update(artifact);
        mac
    }

    fn tag(&self, name: &str, artifact: &[u8]) -> [u8; TAG_LEN] {
        self.mac(name, artifact).finalize().into_bytes().into()
    }

    /// `file` (artifact then tag) without its tag, if the tag is right.
    fn verified(&self, name: &str, mut file: Vec<u8>) -> Option<Vec<u8>> {
        let split = file.len().checked_sub(TAG_LEN)?;
        let tag = file.split_off(split);
        // Constant time (hmac's `verify_slice`).
        self.mac(name, &file).verify_slice(&tag).ok()?;
        Some(file)
    }
}

/// Makes `dir` (0700) when missing; refuses it when it is not a folder
/// owned by this process's user, or when group or others may write into
/// it. Answers that user's id.
fn private_dir(dir: &Path) -> io::Result<u32> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other("not a folder"));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "others may write into it (mode {mode:04o}); give it mode 0700"
        )));
    }
    let uid = own_uid(dir)?;
    if meta.uid() != uid {
        return Err(io::Error::other(format!(
            "owned by user {}, not by this service's user {uid}",
            meta.uid()
        )));
    }
    Ok(uid)
}

/// This process's effective user id: the owner of a file it creates
/// (std offers no safe call for it, and the crate keeps `unsafe` to two
/// places).
fn own_uid(dir: &Path) -> io::Result<u32> {
    let (probe, file) = create_temp(dir, "owner")?;
    let uid = file.metadata().map(|m| m.uid());
    let _ = std::fs::remove_file(&probe);
    uid
}

/// The key in `path`, made (random) when there is none.
fn read_or_create_key(path: &Path, uid: u32) -> io::Result<[u8; KEY_LEN]> {
    match read_key(path, uid) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        found => return found,
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut key = [0u8; KEY_LEN];
    rand::rngs::OsRng.fill_bytes(&mut key);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("plugin-cache.key");
    let (tmp, mut file) = create_temp(dir, name)?;
    let text = format!("{}\n", hex::encode(key));
    // A hard link never replaces an existing name: when another process
    // made the key first, its key is the one read back and used.
    let linked = file
        .write_all(text.as_bytes())
        .and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => read_key(path, uid),
    }
}

/// The key in `path`: 64 hex digits in a regular file of user `uid` that
/// group and others cannot read or write.
fn read_key(path: &Path, uid: u32) -> io::Result<[u8; KEY_LEN]> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.uid() != uid {
        return Err(io::Error::other(format!(
            "owned by user {}, not by this service's user {uid}",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(io::Error::other(format!(
            "group or others may use it (mode {mode:04o}); give it mode 0600"
        )));
    }
    let text = read_regular(file, 1024)?;
    let text = std::str::from_utf8(&text).unwrap_or_default().trim();
    hex::FromHex::from_hex(text)
        .map_err(|_| io::Error::other(format!("must hold {} hex digits", KEY_LEN * 2)))
}

/// The whole content of `file`, which must be a regular file of at most
/// `max` bytes.
fn read_regular(file: File, max: u64) -> io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    if meta.len() > max {
        return Err(io::Error::other(format!("larger than {max} bytes")));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::other(format!("larger than {max} bytes")));
    }
    Ok(bytes)
}

/// A new file `.<name>.<random>.tmp` in `dir`, created exclusively
/// (`O_CREAT|O_EXCL`, so whatever already has that name, a symbolic link
/// included, makes it fail instead of being opened) with `O_NOFOLLOW` and
/// mode 0600. A name taken is retried with another random part.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..4 {
        let mut random = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut random);
        let path = dir.join(format!(".{name}.{}.tmp", hex::encode(random)));
        match create_exclusive(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// Whether `name` is one [`create_temp`] makes: `.<name>.<16 hex>.tmp`.
fn is_temporary_name(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(base, random)| {
            !base.is_empty()
                && random.len() == 16
                && random
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// Removes from `dir` the temporary files of [`create_temp`] (that name
/// form only) last changed more than [`STALE_TEMPORARY`] before `now`: a
/// crash between creating one and renaming it leaves it. A symbolic link
/// of such a name is removed itself, never followed; a folder is left.
/// Answers how many were removed; what cannot be read or removed is left.
fn remove_stale_temporaries(dir: &Path, now: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(is_temporary_name) {
            continue;
        }
        // The entry itself (lstat), not what a link points at.
        let Ok(meta) = entry.metadata() else { continue };
        if !(meta.is_file() || meta.is_symlink()) {
            continue;
        }
        let stale = meta
            .modified()
            .ok()
            .and_then(|changed| now.duration_since(changed).ok())
            .is_some_and(|age| age > STALE_TEMPORARY);
        // Unlinking a name never follows a link.
        if stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Creates `path` for writing, only if nothing has that name; never
/// through a symbolic link; mode 0600 whatever the umask leaves.
fn create_exclusive(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // The umask can only take bits away from 0600; set it exactly anyway.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    fn cache_in(root: &Path) -> ArtifactCache {
        ArtifactCache::open(&root.join("cache"), &root.join("key")).expect("opens")
    }

    #[test]
    fn a_new_cache_is_private_and_keeps_its_key() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = cache_in(root.path());
        assert_eq!(mode(&root.path().join("cache")), 0o700);
        assert_eq!(mode(&root.path().join("key")), 0o600);
        cache.write("a.cwasm", b"code").expect("written");
        assert_eq!(mode(&root.path().join("cache/a.cwasm")), 0o600);
        // Opened again, the same key verifies what was written.
        let again = cache_in(root.path());
        assert!(matches!(again.read("a.cwasm"), Lookup::Verified(b) if b == b"code"));
        assert!(matches!(again.read("b.cwasm"), Lookup::Missing));
    }

    #[test]
    fn changed_moved_or_foreign_artifacts_are_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = cache_in(root.path());
        cache.write("a.cwasm", b"code of a").expect("written");
        cache.write("b.cwasm", b"code of b").expect("written");
        let dir = root.path().join("cache");
        // Another artifact of this very cache under a's name.
        std::fs::copy(dir.join("b.cwasm"), dir.join("a.cwasm")).expect("copied");
        assert!(matches!(cache.read("a.cwasm"), Lookup::Refused(_)));
        // One byte changed.
        let mut bytes = std::fs::read(dir.join("b.cwasm")).expect("read");
        bytes[0] ^= 1;
        std::fs::write(dir.join("b.cwasm"), &bytes).expect("written");
        assert!(matches!(cache.read("b.cwasm"), Lookup::Refused(_)));
        // Shorter than a tag; empty.
        std::fs::write(dir.join("c.cwasm"), b"short").expect("written");
        assert!(matches!(cache.read("c.cwasm"), Lookup::Refused(_)));
        std::fs::write(dir.join("d.cwasm"), b"").expect("written");
        assert!(matches!(cache.read("d.cwasm"), Lookup::Refused(_)));
        // Written under another key.
        let other = tempfile::tempdir().expect("tempdir");
        let foreign = ArtifactCache::open(&dir, &other.path().join("key")).expect("opens");
        foreign.write("e.cwasm", b"code").expect("written");
        assert!(matches!(cache.read("e.cwasm"), Lookup::Refused(_)));
    }

    #[test]
    fn links_are_not_followed_for_reading_or_creating() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = cache_in(root.path());
        cache.write("a.cwasm", b"code").expect("written");
        let dir = root.path().join("cache");
        std::fs::rename(dir.join("a.cwasm"), root.path().join("a")).expect("moved");
        std::os::unix::fs::symlink(root.path().join("a"), dir.join("a.cwasm")).expect("link");
        assert!(matches!(cache.read("a.cwasm"), Lookup::Refused(why) if why.contains("link")));
        // A link where a file is to be created: refused, target untouched,
        // dangling or not.
        let victim = root.path().join("victim");
        std::fs::write(&victim, "precious").expect("victim");
        std::os::unix::fs::symlink(&victim, dir.join("planted")).expect("link");
        std::os::unix::fs::symlink(root.path().join("nothing"), dir.join("dangling"))
            .expect("link");
        for name in ["planted", "dangling"] {
            let err = create_exclusive(&dir.join(name)).expect_err("refused");
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{name}");
        }
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
        assert!(!root.path().join("nothing").exists());
        // Writing replaces the link itself.
        cache.write("a.cwasm", b"new code").expect("written");
        assert!(
            std::fs::symlink_metadata(dir.join("a.cwasm"))
                .expect("there")
                .is_file()
        );
        assert_eq!(
            std::fs::read(root.path().join("a")).expect("read").len(),
            4 + TAG_LEN
        );
    }

    #[test]
    fn temporary_files_a_crash_left_are_removed_and_nothing_else() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = cache_in(root.path());
        cache.write("a.cwasm", b"code").expect("written");
        let dir = root.path().join("cache");
        let now = SystemTime::now() + Duration::from_secs(2 * 3600);
        // Left by a crash two hours before `now`.
        let (left, _) = create_temp(&dir, "a.cwasm").expect("made");
        let (probe, _) = create_temp(&dir, "owner").expect("made");
        // Another host's write in progress: a minute old at `now`.
        let (writing, file) = create_temp(&dir, "b.cwasm").expect("made");
        file.set_modified(now - Duration::from_secs(60))
            .expect("set its time");
        // Not of the cache's temporary form, however old.
        let others = [
            "notes.tmp",
            ".a.cwasm.tmp",
            ".a.cwasm.0123456789ABCDEF.tmp",
            ".a.cwasm.0123456789abcde.tmp",
            "..0123456789abcdef.tmp",
            "a.cwasm.0123456789abcdef.tmp",
        ];
        for name in others {
            std::fs::write(dir.join(name), "kept").expect("written");
        }
        // A link of the temporary form: removed, its target untouched.
        let victim = root.path().join("victim");
        std::fs::write(&victim, "precious").expect("victim");
        let link = dir.join(".c.cwasm.1111111111111111.tmp");
        std::os::unix::fs::symlink(&victim, &link).expect("link");
        // A folder of that form is left.
        let folder = dir.join(".d.cwasm.2222222222222222.tmp");
        std::fs::create_dir(&folder).expect("folder");

        assert_eq!(remove_stale_temporaries(&dir, now), 3);
        assert!(!left.exists() && !probe.exists());
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the link is gone"
        );
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
        assert!(writing.exists(), "a write in progress is left");
        assert!(folder.is_dir());
        for name in others {
            assert!(dir.join(name).exists(), "{name}");
        }
        assert!(matches!(cache.read("a.cwasm"), Lookup::Verified(b) if b == b"code"));
        // Nothing stale at the real time: opening removes nothing young.
        cache_in(root.path());
        assert!(writing.exists());
    }

    #[test]
    fn a_folder_others_may_write_or_a_key_others_may_read_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("cache");
        let key = root.path().join("key");
        cache_in(root.path());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let why = ArtifactCache::open(&dir, &key).expect_err("refused");
        assert!(why.contains("mode 0777"), "{why}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        ArtifactCache::open(&dir, &key).expect("others may read it");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let why = ArtifactCache::open(&dir, &key).expect_err("refused");
        assert!(why.contains("mode 0640"), "{why}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(&key, "not hex").expect("written");
        assert!(ArtifactCache::open(&dir, &key).is_err());
    }
}
