//! `perfpipe cache keygen NAME`: a new key pair in two files, the secret one
//! readable by its owner only. (files)

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{Error, PublicKey, SecretKey};

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

/// The secret key in `path`.
pub fn read_secret(path: &Path) -> Result<SecretKey, Error> {
    let text = fs_err::read_to_string(path).map_err(|source| Error::KeyFile {
        path: path.to_owned(),
        source,
    })?;
    Ok(SecretKey::parse(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
}
