//! The files of a backup or restore: a new file made beside its final
//! name (0600 from the start: a copy of the database is patient data,
//! docs/operations.md#files-and-permissions), synced, then renamed into
//! place, so a crash leaves either the old file or the whole new one,
//! never half of one.
//!
//! Never over an existing file unless `--force`; a replaced database is
//! kept as `<name>.replaced-<time>`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

/// A file being written under a temporary name in the folder of its final
/// one; removed on drop unless [`Staged::publish`] moved it into place.
#[derive(Debug)]
pub struct Staged {
    path: PathBuf,
    published: bool,
}

impl Staged {
    /// An empty file (mode 0600, never through a symbolic link) beside
    /// `dest`, named after it, this process and the moment, so two runs
    /// never share one. Makes `dest`'s folder (0700) when missing.
    pub fn beside(dest: &Path, purpose: &str) -> io::Result<Staged> {
        let dir = folder(dest);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let name = dest
            .file_name()
            .map_or_else(|| "outcomes".into(), |n| n.to_string_lossy());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = dir.join(format!(".{name}.{purpose}-{}-{nanos}", std::process::id()));
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        Ok(Staged {
            path,
            published: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Fills the file with the bytes of `source` (its mode stays 0600,
    /// whatever the source's).
    pub fn copy_from(&self, source: &Path) -> io::Result<u64> {
        let mut from = File::open(source)?;
        let mut to = OpenOptions::new()
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)?;
        io::copy(&mut from, &mut to)
    }

    /// Its size in bytes.
    pub fn len(&self) -> io::Result<u64> {
        Ok(std::fs::metadata(&self.path)?.len())
    }

    /// Puts the file at `dest`, its contents on disk first and the rename
    /// after. Without `replace`, a file already at `dest` is left alone and
    /// this fails (a hard link, which never replaces, then the temporary
    /// name removed); with it, `dest` is replaced in one step.
    pub fn publish(mut self, dest: &Path, replace: bool) -> io::Result<()> {
        File::open(&self.path)?.sync_all()?;
        if replace {
            std::fs::rename(&self.path, dest)?;
        } else {
            match std::fs::hard_link(&self.path, dest) {
                Ok(()) => std::fs::remove_file(&self.path)?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
                // A file system without hard links: check, then rename.
                Err(_) if !dest.exists() => std::fs::rename(&self.path, dest)?,
                Err(e) => return Err(e),
            }
        }
        self.published = true;
        sync_folder(&folder(dest))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.path);
            // SQLite's journal of the copy, if a failure left one.
            let mut journal = self.path.clone().into_os_string();
            journal.push("-journal");
            let _ = std::fs::remove_file(journal);
        }
    }
}

/// The folder a file is in (`.` for a bare name).
pub fn folder(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Makes the renames in `dir` durable (a rename is a change of the
/// folder, which has its own fsync).
pub fn sync_folder(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `file` with `suffix` added to its name (`outcomes.db` + `-wal`).
pub fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The name a replaced database is kept under:
/// `outcomes.db.replaced-20260301T090000Z`, with `-2`, `-3`, ... when
/// that is taken.
pub fn aside_name(file: &Path, now: DateTime<Utc>) -> PathBuf {
    let base = with_suffix(file, &format!(".replaced-{}", now.format("%Y%m%dT%H%M%SZ")));
    let taken =
        |p: &Path| p.exists() || with_suffix(p, "-wal").exists() || with_suffix(p, "-shm").exists();
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| with_suffix(&base, &format!("-{n}")))
        .find(|p| !taken(p))
        .unwrap_or(base)
}

/// Sizes for people: `812 bytes`, `3.4 MiB`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_staged_file_is_private_and_never_replaces_unless_told() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("sub/copy.db");
        let staged = Staged::beside(&dest, "backup").expect("stages");
        let mode = std::fs::metadata(staged.path())
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        staged.publish(&dest, false).expect("publishes");
        assert!(dest.exists());
        let again = Staged::beside(&dest, "backup").expect("stages");
        let temp = again.path().to_owned();
        let refused = again.publish(&dest, false).expect_err("dest exists");
        assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists);
        assert!(!temp.exists(), "the temporary file is removed");
        let replacing = Staged::beside(&dest, "backup").expect("stages");
        replacing.publish(&dest, true).expect("replaces");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .expect("lists")
            .collect();
        assert_eq!(left.len(), 1, "only the published file is left");
    }

    #[test]
    fn aside_names_do_not_collide() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("outcomes.db");
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 3, 1, 9, 0, 0)
            .single()
            .expect("a valid time");
        let first = aside_name(&db, now);
        assert_eq!(
            first,
            dir.path().join("outcomes.db.replaced-20260301T090000Z")
        );
        std::fs::write(&first, b"x").expect("writes");
        assert_eq!(
            aside_name(&db, now),
            dir.path().join("outcomes.db.replaced-20260301T090000Z-2")
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(812), "812 bytes");
        assert_eq!(size_text(3 * 1024 * 1024 + 400 * 1024), "3.4 MiB");
    }
}
