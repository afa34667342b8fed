//! Per-cache credentials, from `[credentials."HOST"]` of the user's
//! config.toml only (a project's file naming them is refused): a username
//! with a password read from an environment variable or a file, or a bearer
//! token read from a file; for an `s3://` cache, the username and password
//! are an access key, with temporary credentials' session token read from
//! a variable or a file. An `s3://` cache with no section for its host
//! takes the access key every AWS tool reads from the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); a
//! section wins. The secret itself is never written in a configuration
//! file, and never shown.

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
    /// The environment variable holding an S3 session token (temporary
    /// credentials: STS, SSO), signed with the access key.
    pub session_token_env: Option<String>,
    /// The file holding an S3 session token (its first line).
    pub session_token_file: Option<PathBuf>,
}

/// A secret to show a cache.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    Basic {
        username: String,
        password: String,
    },
    Bearer(String),
    /// What signs an `s3://` cache's requests.
    AccessKey {
        id: String,
        secret: String,
        /// Temporary credentials' third part (STS, SSO).
        session_token: Option<String>,
        origin: KeyOrigin,
    },
}

/// Where an S3 access key came from, for the messages when a server
/// refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrigin {
    /// `[credentials."HOST"]` in the user's config.toml.
    Config,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    Environment,
}

/// The environment's access key, as AWS tools read it.
const ACCESS_KEY_ID_VAR: &str = "AWS_ACCESS_KEY_ID";
const SECRET_ACCESS_KEY_VAR: &str = "AWS_SECRET_ACCESS_KEY";
const SESSION_TOKEN_VAR: &str = "AWS_SESSION_TOKEN";

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password or the token.
        match self {
            Self::Basic { username, .. } => write!(f, "Basic({username})"),
            Self::Bearer(_) => f.write_str("Bearer"),
            Self::AccessKey { id, origin, .. } => write!(f, "AccessKey({id}, {origin:?})"),
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
        return match location {
            Location::S3(_) => from_aws_environment(&host, |name| std::env::var(name).ok()),
            _ => Ok(None),
        };
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
    // A secret from the variable `env` names or the first line of `file`,
    // whichever is given (`what`: the pair's common part); `None`: neither.
    let one_of = |what: &str, env: &Option<String>, file: &Option<PathBuf>| match (env, file) {
        (None, None) => Ok(None),
        (Some(name), None) => std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .map(Some)
            .ok_or_else(|| bad(format!("`{name}` is not set"))),
        (None, Some(file)) => first_line(file).map(Some),
        (Some(_), Some(_)) => Err(bad(format!("give one of `{what}-env` and `{what}-file`"))),
    };
    let session_token_named =
        source.session_token_env.is_some() || source.session_token_file.is_some();
    if session_token_named && !matches!(location, Location::S3(_)) {
        return Err(bad(
            "`session-token-env` and `session-token-file` are an s3:// cache's temporary credentials; this cache does not sign with an access key".into(),
        ));
    }
    let credential = match source {
        CredentialSource {
            username: None,
            password_env: None,
            password_file: None,
            token_file: Some(file),
            ..
        } => Credential::Bearer(first_line(file)?),
        CredentialSource {
            username: Some(username),
            password_env,
            password_file,
            token_file: None,
            ..
        } => {
            let password = one_of("password", password_env, password_file)?
                .ok_or_else(|| bad("give one of `password-env` and `password-file`".into()))?;
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
    let credential = match (location, credential) {
        (Location::S3(_), Credential::Bearer(_)) => {
            return Err(bad(
                "an s3:// cache signs with an access key: `username` (its ID) with `password-env` or `password-file` (its secret), not `token-file`".into(),
            ));
        }
        (Location::S3(_), Credential::Basic { username, .. }) if !is_header_text(&username) => {
            return Err(bad(
                "`username`, the access key ID, holds characters other than visible ASCII".into(),
            ));
        }
        (Location::S3(_), Credential::Basic { username, password }) => {
            let session_token = one_of(
                "session-token",
                &source.session_token_env,
                &source.session_token_file,
            )?;
            if session_token.as_deref().is_some_and(|t| !is_header_text(t)) {
                return Err(bad(
                    "the session token holds characters other than visible ASCII".into(),
                ));
            }
            Credential::AccessKey {
                id: username,
                secret: password,
                session_token,
                origin: KeyOrigin::Config,
            }
        }
        (_, credential) => credential,
    };
    credential.keep_out_of_messages(&host).map_err(bad)?;
    Ok(Some(credential))
}

/// The access key `var` (the environment) holds, for an `s3://` cache on
/// `host`, which no section names; `None` when none of its variables is
/// set, an error (exit 2) when only some are.
fn from_aws_environment(
    host: &str,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<Credential>, Error> {
    let var = |name: &str| var(name).filter(|v| !v.is_empty());
    let bad = |why: String| Error::Credentials {
        host: host.to_owned(),
        why: format!(
            "{why} (read from the environment, as your config.toml has no `[credentials.\"{host}\"]`)"
        ),
    };
    let session_token = var(SESSION_TOKEN_VAR);
    let (id, secret) = match (var(ACCESS_KEY_ID_VAR), var(SECRET_ACCESS_KEY_VAR)) {
        (Some(id), Some(secret)) => (id, secret),
        (None, None) if session_token.is_none() => return Ok(None),
        (id, _) => {
            let missing = if id.is_none() {
                ACCESS_KEY_ID_VAR
            } else {
                SECRET_ACCESS_KEY_VAR
            };
            return Err(bad(format!(
                "`{missing}` is not set, but other parts of an access key are"
            )));
        }
    };
    if !is_header_text(&id) {
        return Err(bad(format!(
            "`{ACCESS_KEY_ID_VAR}` holds characters other than visible ASCII"
        )));
    }
    if session_token.as_deref().is_some_and(|t| !is_header_text(t)) {
        return Err(bad(format!(
            "`{SESSION_TOKEN_VAR}` holds characters other than visible ASCII"
        )));
    }
    let credential = Credential::AccessKey {
        id,
        secret,
        session_token,
        origin: KeyOrigin::Environment,
    };
    credential.keep_out_of_messages(host).map_err(bad)?;
    Ok(Some(credential))
}

/// Whether `text` may go in a request's headers as it is (an access key's
/// ID in `Authorization`, a session token in `x-amz-security-token`):
/// visible ASCII, as AWS writes them.
fn is_header_text(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_graphic())
}

impl Credential {
    /// Makes every later redaction (`crate::secrets`) replace this secret,
    /// as written and as the `Authorization` header carries it (a registry
    /// may echo either in an error); one too short to redact is refused.
    fn keep_out_of_messages(&self, host: &str) -> Result<(), String> {
        let section = format!("[credentials.\"{host}\"]");
        // The secret first (its length is checked), then its other forms.
        let forms: Vec<(&str, String)> = match self {
            Self::Basic { username, password } => vec![
                (&section, password.clone()),
                (&section, STANDARD.encode(format!("{username}:{password}"))),
            ],
            Self::Bearer(token) => vec![(&section, token.clone())],
            // Signed with, never sent: the secret as it is, and the token.
            Self::AccessKey {
                secret,
                session_token,
                origin,
                ..
            } => {
                // Named where the user wrote them: the section, or the variables.
                let (secret_name, token_name) = match origin {
                    KeyOrigin::Config => (section.as_str(), section.as_str()),
                    KeyOrigin::Environment => (SECRET_ACCESS_KEY_VAR, SESSION_TOKEN_VAR),
                };
                std::iter::once((secret_name, secret.clone()))
                    .chain(session_token.iter().map(|t| (token_name, t.clone())))
                    .collect()
            }
        };
        for (name, value) in &forms {
            let len = value.chars().count();
            if len < crate::secrets::MIN_LEN {
                return Err(format!(
                    "its secret has {len} characters; perfpipe keeps secrets of {} or more out of its messages and refuses shorter ones",
                    crate::secrets::MIN_LEN
                ));
            }
            crate::secrets::add_configured(name, value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::s3::vars;
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

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a test's own secret files")]
    fn a_sections_session_token_signs_with_its_access_key_for_an_s3_cache_only() {
        let dir = tempfile::tempdir().unwrap();
        let (secret, token) = (dir.path().join("secret"), dir.path().join("token"));
        std::fs::write(&secret, "section-secret-4567\n").unwrap();
        std::fs::write(&token, "section-session-token-4567\n").unwrap();
        let section = |token_file: Option<PathBuf>, session_token_env: Option<String>| {
            CredentialSources::from([(
                "127.0.0.1:9000".to_owned(),
                CredentialSource {
                    username: Some("AKIDSECTION".into()),
                    password_file: Some(secret.clone()),
                    session_token_file: token_file,
                    session_token_env,
                    ..Default::default()
                },
            )])
        };
        let bucket = Location::parse("s3://team?endpoint=http://127.0.0.1:9000").unwrap();
        let found = for_location(&section(Some(token.clone()), None), &bucket)
            .unwrap()
            .unwrap();
        assert_eq!(
            found,
            Credential::AccessKey {
                id: "AKIDSECTION".into(),
                secret: "section-secret-4567".into(),
                session_token: Some("section-session-token-4567".into()),
                origin: KeyOrigin::Config,
            }
        );
        assert!(!format!("{found:?}").contains("section-s"), "{found:?}");
        // Redacted under the section's name, where the user configured it.
        let shown = crate::secrets::redact("echo section-session-token-4567");
        assert_eq!(shown, "echo [redacted [credentials.\"127.0.0.1:9000\"]]");

        let both = section(Some(token.clone()), Some("TEAM_STS".into()));
        let e = for_location(&both, &bucket).unwrap_err().to_string();
        assert!(
            e.contains("give one of `session-token-env` and `session-token-file`"),
            "{e}"
        );
        std::fs::write(&token, "two words\n").unwrap();
        let e = for_location(&section(Some(token.clone()), None), &bucket)
            .unwrap_err()
            .to_string();
        assert!(e.contains("session token holds characters"), "{e}");
        std::fs::write(&token, "abc\n").unwrap();
        let e = for_location(&section(Some(token.clone()), None), &bucket)
            .unwrap_err()
            .to_string();
        assert!(e.contains("refuses shorter ones"), "{e}");
        // Another kind of cache has no session token to sign with.
        let web = CredentialSources::from([(
            "cache.example".to_owned(),
            CredentialSource {
                username: Some("alice".into()),
                password_file: Some(secret.clone()),
                session_token_file: Some(token),
                ..Default::default()
            },
        )]);
        let e = for_location(&web, &Location::parse("https://cache.example/t").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("an s3:// cache's temporary credentials"), "{e}");
    }

    #[test]
    fn an_s3_cache_without_a_section_takes_the_aws_variables_and_a_section_wins() {
        let found = from_aws_environment(
            "h:1",
            vars(&[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "env-secret-0123"),
                ("AWS_SESSION_TOKEN", "env-session-token-0123"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            found,
            Credential::AccessKey {
                id: "AKIDENV".into(),
                secret: "env-secret-0123".into(),
                session_token: Some("env-session-token-0123".into()),
                origin: KeyOrigin::Environment,
            }
        );
        assert!(!format!("{found:?}").contains("env-s"), "{found:?}");
        let shown = crate::secrets::redact("echo env-secret-0123 env-session-token-0123");
        assert!(!shown.contains("env-s"), "{shown}");
        assert_eq!(
            from_aws_environment("h:1", vars(&[("AWS_ACCESS_KEY_ID", "")])).unwrap(),
            None
        );
        for partial in [
            &[("AWS_ACCESS_KEY_ID", "AKIDENV")][..],
            &[("AWS_SESSION_TOKEN", "env-session-token-0123")][..],
        ] {
            let e = from_aws_environment("h:1", vars(partial))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("is not set") && e.contains("from the environment"),
                "{e}"
            );
        }
        let e = from_aws_environment(
            "h:1",
            vars(&[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "env-secret-0123"),
                ("AWS_SESSION_TOKEN", "two\nlines"),
            ]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("`AWS_SESSION_TOKEN` holds"), "{e}");
        let e = from_aws_environment(
            "h:1",
            vars(&[
                ("AWS_ACCESS_KEY_ID", "AKID\u{e9}"),
                ("AWS_SECRET_ACCESS_KEY", "env-secret-0123"),
            ]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("`AWS_ACCESS_KEY_ID` holds"), "{e}");

        // A section for the bucket's host is read, whatever the environment holds.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        #[expect(clippy::disallowed_methods, reason = "a test's own secret file")]
        std::fs::write(&file, "section-secret-0123\n").unwrap();
        let sources = CredentialSources::from([(
            "127.0.0.1:9000".to_owned(),
            CredentialSource {
                username: Some("AKIDSECTION".into()),
                password_file: Some(file),
                ..Default::default()
            },
        )]);
        let bucket = Location::parse("s3://team?endpoint=http://127.0.0.1:9000").unwrap();
        assert_eq!(
            for_location(&sources, &bucket).unwrap(),
            Some(Credential::AccessKey {
                id: "AKIDSECTION".into(),
                secret: "section-secret-0123".into(),
                session_token: None,
                origin: KeyOrigin::Config,
            })
        );
    }
}
