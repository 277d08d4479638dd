//! Compiled artifacts on disk, keyed by module content hash and engine key,
//! so a restart does not recompile (design.md, Sandbox). Files are written
//! to a temporary name and renamed, so a reader never sees half a file; an
//! artifact that fails to load is recompiled and replaced.

use std::path::PathBuf;

use wasmtime::Module;

use super::engine::Runtime;
use super::error::PluginError;

/// Where compiled artifacts live; `None` compiles every time.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: Option<PathBuf>,
    key: String,
}

/// Whether a module came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiled {
    Cached,
    Fresh,
}

impl ArtifactCache {
    pub fn new(runtime: &Runtime, dir: Option<PathBuf>) -> ArtifactCache {
        ArtifactCache {
            dir,
            key: runtime.artifact_key(),
        }
    }

    /// The module for `bytes` (whose SHA-256 is `sha256`), from the cache or
    /// compiled now.
    pub fn module(
        &self,
        runtime: &Runtime,
        sha256: &str,
        bytes: &[u8],
    ) -> Result<(Module, Compiled), PluginError> {
        let path = self
            .dir
            .as_ref()
            .map(|d| d.join(format!("{sha256}-{}.cwasm", self.key)));
        if let Some(path) = path.as_ref().filter(|p| p.is_file()) {
            match load(runtime, path) {
                Ok(module) => return Ok((module, Compiled::Cached)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "compiled artifact unusable; recompiling")
                }
            }
        }
        let module = Module::from_binary(&runtime.engine, bytes)
            .map_err(|e| PluginError::Invalid(format!("{e:#}")))?;
        if let Some(path) = path
            && let Err(e) = store(&module, &path)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not cache the compiled module");
        }
        Ok((module, Compiled::Fresh))
    }
}

#[allow(unsafe_code)]
fn load(runtime: &Runtime, path: &std::path::Path) -> Result<Module, String> {
    // SAFETY: wasmtime requires that the file be an artifact it produced and
    // that nobody changes it while mapped. Only hosts write into the cache
    // folder (under the data directory), always to a temporary name renamed
    // into place: a rename replaces the directory entry, never the bytes of
    // a file already mapped. The file name binds it to the module's hash and
    // this engine's configuration, and wasmtime itself checks the version
    // and configuration header before using it.
    unsafe { Module::deserialize_file(&runtime.engine, path) }.map_err(|e| format!("{e:#}"))
}

fn store(module: &Module, path: &std::path::Path) -> std::io::Result<()> {
    let bytes = module
        .serialize()
        .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
