//! Per-cache credentials, from `[credentials."HOST"]` of the user's
//! config.toml only (a project's file naming them is refused): a username
//! with a password read from an environment variable or a file, or a bearer
//! token read from a file. The secret itself is never written in a
//! configuration file, and never shown.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::Error;
use super::location::Location;

/// `[credentials."HOST"]` as written: where the secret is, not the secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CredentialSource {
    pub username: Option<String>,
    /// The environment variable holding the password.
    pub password_env: Option<String>,
    /// The file holding the password (its first line).
    pub password_file: Option<PathBuf>,
    /// The file holding a bearer token (its first line).
    pub token_file: Option<PathBuf>,
}

/// A secret to show a cache.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    Basic { username: String, password: String },
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password or the token.
        match self {
            Self::Basic { username, .. } => write!(f, "Basic({username})"),
            Self::Bearer(_) => f.write_str("Bearer"),
        }
    }
}

/// The credentials of the user's configuration, by host (`host[:port]`).
pub type CredentialSources = BTreeMap<String, CredentialSource>;

/// The credential `sources` give for `location`'s host, read now; an error
/// (exit 2) when they name a variable or a file that holds none.
pub fn for_location(
    sources: &CredentialSources,
    location: &Location,
) -> Result<Option<Credential>, Error> {
    let Some(host) = location.host() else {
        return Ok(None);
    };
    let Some(source) = sources.get(&host) else {
        return Ok(None);
    };
    let bad = |why: String| Error::Credentials {
        host: host.clone(),
        why,
    };
    let first_line = |path: &PathBuf| -> Result<String, Error> {
        let text = fs_err::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let line = text.lines().next().unwrap_or_default().trim().to_owned();
        if line.is_empty() {
            return Err(bad(format!("`{}` is empty", path.display())));
        }
        Ok(line)
    };
    let credential = match source {
        CredentialSource {
            username: None,
            password_env: None,
            password_file: None,
            token_file: Some(file),
        } => Credential::Bearer(first_line(file)?),
        CredentialSource {
            username: Some(username),
            password_env,
            password_file,
            token_file: None,
        } => {
            let password = match (password_env, password_file) {
                (Some(name), None) => std::env::var(name)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| bad(format!("`{name}` is not set")))?,
                (None, Some(file)) => first_line(file)?,
                _ => return Err(bad("give one of `password-env` and `password-file`".into())),
            };
            Credential::Basic {
                username: username.clone(),
                password,
            }
        }
        _ => {
            return Err(bad(
                "give `username` with `password-env` or `password-file`, or `token-file` alone"
                    .into(),
            ));
        }
    };
    if let (Location::S3(_), Credential::Bearer(_)) = (location, &credential) {
        return Err(bad(
            "an s3:// cache signs with an access key: `username` (its ID) with `password-env` or `password-file` (its secret), not `token-file`".into(),
        ));
    }
    credential.keep_out_of_messages(&host).map_err(bad)?;
    Ok(Some(credential))
}

impl Credential {
    /// Makes every later redaction (`crate::secrets`) replace this secret,
    /// as written and as the `Authorization` header carries it (a registry
    /// may echo either in an error); one too short to redact is refused.
    fn keep_out_of_messages(&self, host: &str) -> Result<(), String> {
        let name = format!("[credentials.\"{host}\"]");
        let (secret, header) = match self {
            Self::Basic { username, password } => {
                (password, STANDARD.encode(format!("{username}:{password}")))
            }
            Self::Bearer(token) => (token, token.clone()),
        };
        let len = secret.chars().count();
        if len < crate::secrets::MIN_LEN {
            return Err(format!(
                "its secret has {len} characters; perfpipe keeps secrets of {} or more out of its messages and refuses shorter ones",
                crate::secrets::MIN_LEN
            ));
        }
        crate::secrets::add_configured(&name, secret);
        crate::secrets::add_configured(&name, &header);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a test's own token file")]
    fn credentials_are_read_for_the_locations_host_only() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "s3cret-token\n").unwrap();
        let sources = CredentialSources::from([
            (
                "cache.example:8443".to_owned(),
                CredentialSource {
                    token_file: Some(token),
                    ..Default::default()
                },
            ),
            (
                "registry.example".to_owned(),
                CredentialSource {
                    username: Some("alice".into()),
                    password_file: Some(dir.path().join("absent")),
                    ..Default::default()
                },
            ),
        ]);
        let web = Location::parse("https://cache.example:8443/team").unwrap();
        let found = for_location(&sources, &web).unwrap().unwrap();
        assert_eq!(found, Credential::Bearer("s3cret-token".into()));
        assert!(!format!("{found:?}").contains("s3cret"));
        let other = Location::parse("https://cache.example/team").unwrap();
        assert_eq!(for_location(&sources, &other).unwrap(), None);
        let registry = Location::parse("oci://registry.example/team/r").unwrap();
        let e = for_location(&sources, &registry).unwrap_err().to_string();
        assert!(e.contains("registry.example"), "{e}");
        let both = CredentialSources::from([(
            "registry.example".to_owned(),
            CredentialSource {
                username: Some("alice".into()),
                token_file: Some("t".into()),
                ..Default::default()
            },
        )]);
        assert!(for_location(&both, &registry).is_err());
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a test's own password file")]
    fn a_password_read_is_redacted_everywhere_after_and_a_short_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        let sources = |password: &str| {
            std::fs::write(&file, format!("{password}\n")).unwrap();
            CredentialSources::from([(
                "registry.example".to_owned(),
                CredentialSource {
                    username: Some("carol".into()),
                    password_file: Some(file.clone()),
                    ..Default::default()
                },
            )])
        };
        let registry = Location::parse("oci://registry.example/team/r").unwrap();
        for_location(&sources("file-pw-0123"), &registry).unwrap();
        let header = STANDARD.encode("carol:file-pw-0123");
        let echoed = format!("login failed for carol:file-pw-0123 (Basic {header})");
        let shown = crate::secrets::redact(&echoed);
        assert!(
            !shown.contains("file-pw") && !shown.contains(&header),
            "{shown}"
        );
        assert!(
            shown.contains("[credentials.\"registry.example\"]"),
            "{shown}"
        );
        let e = for_location(&sources("abc"), &registry).unwrap_err();
        assert!(e.to_string().contains("refuses shorter ones"), "{e}");
    }
}
