//! `perfpipe cache keygen NAME`: a new key pair in two files, the secret one
//! readable by its owner only. (files)

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::Error;
use crate::signing::keys::NotASecretKey;
use crate::signing::{PublicKey, SecretKey};

/// What `keygen` wrote.
#[derive(Debug)]
pub struct KeyPair {
    pub public: PublicKey,
    pub secret_file: PathBuf,
    pub public_file: PathBuf,
}

/// Writes `DIR/NAME.secret` (mode 0600) and `DIR/NAME.public`; refuses to
/// replace either.
pub fn keygen(name: &str, dir: &Path) -> Result<KeyPair, Error> {
    let secret = SecretKey::generate(name)?;
    let secret_file = dir.join(format!("{name}.secret"));
    let public_file = dir.join(format!("{name}.public"));
    for path in [&secret_file, &public_file] {
        if path.exists() {
            return Err(Error::KeyExists { path: path.clone() });
        }
    }
    let write = |path: &Path, text: String, mode: u32| -> std::io::Result<()> {
        fs_err::create_dir_all(dir)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)?;
        file.write_all(format!("{text}\n").as_bytes())?;
        file.sync_all()
    };
    let failed = |path: &PathBuf| {
        let path = path.clone();
        move |source| Error::KeyFile { path, source }
    };
    write(&secret_file, secret.to_text(), 0o600).map_err(failed(&secret_file))?;
    write(&public_file, secret.public().to_string(), 0o644).map_err(failed(&public_file))?;
    Ok(KeyPair {
        public: secret.public(),
        secret_file,
        public_file,
    })
}

/// The secret key in `path`: a regular file only its owner may read (as
/// ssh insists of a private key), whose text is never shown.
pub fn read_secret(path: &Path) -> Result<SecretKey, Error> {
    let failed = |source| Error::KeyFile {
        path: path.to_owned(),
        source,
    };
    let mode = fs_err::metadata(path).map_err(failed)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(Error::SecretKeyReadable {
            path: path.to_owned(),
            mode: mode & 0o777,
        });
    }
    // Not more than a key's text: a wrong file is never read whole.
    let bytes = crate::regular_file::read_at_most(path, MAX_KEY_FILE_BYTES).map_err(failed)?;
    let text = String::from_utf8(bytes).map_err(|_| Error::NotASecretKey {
        path: path.to_owned(),
        why: "it is not text".into(),
    })?;
    SecretKey::parse(&text).map_err(|NotASecretKey(why)| Error::NotASecretKey {
        path: path.to_owned(),
        why,
    })
}

/// A secret key file is one line of about 100 bytes.
const MAX_KEY_FILE_BYTES: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_writes_a_private_secret_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let pair = keygen("alice-1", dir.path()).unwrap();
        let mode = fs_err::metadata(&pair.secret_file)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let secret = read_secret(&pair.secret_file).unwrap();
        assert_eq!(secret.public(), pair.public);
        let public = fs_err::read_to_string(&pair.public_file).unwrap();
        assert_eq!(PublicKey::parse(&public).unwrap(), pair.public);
        assert!(matches!(
            keygen("alice-1", dir.path()),
            Err(Error::KeyExists { .. })
        ));
        assert_eq!(
            read_secret(&pair.secret_file).unwrap().public(),
            pair.public
        );
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "the test's own files")]
    fn a_secret_key_file_others_may_read_or_that_holds_no_key_is_refused_unquoted() {
        let dir = tempfile::tempdir().unwrap();
        let pair = keygen("alice", dir.path()).unwrap();
        let open = |mode| {
            std::fs::set_permissions(&pair.secret_file, std::fs::Permissions::from_mode(mode))
                .unwrap()
        };
        open(0o640);
        let e = read_secret(&pair.secret_file).unwrap_err();
        assert!(
            matches!(e, Error::SecretKeyReadable { mode: 0o640, .. }),
            "{e}"
        );
        open(0o600);
        let wrong = dir.path().join("registry-password");
        std::fs::write(&wrong, "hunter2-registry-password:s3cret\nsecond line\n").unwrap();
        std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = read_secret(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("registry-password` does not hold a secret key"),
            "{e}"
        );
        assert!(!e.contains("hunter2-") && !e.contains("s3cret"), "{e}");
    }
}
